import { randomBytes } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** fsync a directory so a rename or a new entry in it survives a power cut. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Replaces `path` with `data` so that a reader (or a restart) sees either the old or the new
 * content, never a torn one: write a temporary file, fsync it, rename it over, fsync the directory.
 */
export async function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  await syncDir(dirname(path));
}
