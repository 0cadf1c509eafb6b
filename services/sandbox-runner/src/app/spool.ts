import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncDir, writeFileAtomic } from './atomic-file';
import { RECORD_BYTES, validPrefix } from './spool-records';
import { SpoolWriter, type SpoolWriterEvents } from './spool-writer';
import type { CommandMeta, ExitInfo } from './types';

/**
 * One command's spool directory, `<data>/commands/<commandId>/`:
 * `meta.json` (atomic), `output.bin` (stdout+stderr bytes in arrival order), `records.bin`
 * (one record per appended run of one stream), `exit.json` (atomic, written only after all output is synced).
 */
export class CommandSpool {
  readonly metaPath: string;
  readonly outputPath: string;
  readonly recordsPath: string;
  readonly exitPath: string;
  /** Written by the command itself (its stdout and stderr), copied into output.bin by the runner. */
  readonly rawPaths: { readonly stdout: string; readonly stderr: string };
  /** Written by the sandbox init when the command ended: `exit <code>` or `signal <n>`. */
  readonly statusPath: string;
  /** The command's stdin FIFO (see `CommandMeta.stdin`). */
  readonly stdinPath: string;
  /** Meta writes are serialised so an older snapshot never lands after a newer one. */
  private metaChain: Promise<void> = Promise.resolve();

  constructor(readonly dir: string) {
    this.metaPath = join(dir, 'meta.json');
    this.outputPath = join(dir, 'output.bin');
    this.recordsPath = join(dir, 'records.bin');
    this.exitPath = join(dir, 'exit.json');
    this.rawPaths = { stdout: join(dir, 'stdout.raw'), stderr: join(dir, 'stderr.raw') };
    this.statusPath = join(dir, 'status');
    this.stdinPath = join(dir, 'stdin.fifo');
  }

  static forCommand(commandsRoot: string, commandId: string): CommandSpool {
    return new CommandSpool(join(commandsRoot, commandId));
  }

  /** Creates the directory, the empty output files and meta.json; returns a writer for the output. */
  async create(meta: CommandMeta, events: SpoolWriterEvents): Promise<SpoolWriter> {
    await mkdir(this.dir, { recursive: false, mode: 0o700 });
    const output = await open(this.outputPath, 'wx', 0o600);
    let records: FileHandle | undefined;
    try {
      records = await open(this.recordsPath, 'wx', 0o600);
      await this.writeMeta(meta);
      await syncDir(this.dir);
    } catch (e) {
      await output.close();
      await records?.close();
      throw e;
    }
    return new SpoolWriter(output, records, events);
  }

  /** A writer that appends after what `recover()` found valid (a re-adopted command goes on writing). */
  async reopen(valid: { count: number; endOffset: number }, events: SpoolWriterEvents): Promise<SpoolWriter> {
    const output = await open(this.outputPath, 'r+');
    try {
      return new SpoolWriter(output, await open(this.recordsPath, 'r+'), events, { offset: valid.endOffset, records: valid.count });
    } catch (e) {
      await output.close();
      throw e;
    }
  }

  /** Removes the raw output files once their bytes are in output.bin. */
  async removeRaw(): Promise<void> {
    await Promise.all([this.rawPaths.stdout, this.rawPaths.stderr].map((p) => rm(p, { force: true })));
  }

  /** Removes the init's status file once the exit record holds what it said. */
  async removeStatus(): Promise<void> {
    await rm(this.statusPath, { force: true });
  }

  writeMeta(meta: CommandMeta): Promise<void> {
    const snapshot = JSON.stringify(meta);
    const next = this.metaChain.then(() => writeFileAtomic(this.metaPath, snapshot));
    this.metaChain = next.catch(() => undefined);
    return next;
  }

  async readMeta(): Promise<CommandMeta> {
    return JSON.parse(await readFile(this.metaPath, 'utf8')) as CommandMeta;
  }

  writeExit(exit: ExitInfo): Promise<void> {
    return writeFileAtomic(this.exitPath, JSON.stringify(exit));
  }

  async readExit(): Promise<ExitInfo | null> {
    try {
      return JSON.parse(await readFile(this.exitPath, 'utf8')) as ExitInfo;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  /** Records whose bytes are all on disk; torn tails left by a crash are cut off. */
  async recover(): Promise<{ count: number; endOffset: number }> {
    const outputSize = await stat(this.outputPath).then((s) => s.size, () => 0);
    const records = await open(this.recordsPath, 'a+').catch(() => null);
    if (!records) return { count: 0, endOffset: 0 };
    try {
      const valid = await validPrefix(records, outputSize);
      await records.truncate(valid.count * RECORD_BYTES);
      await records.sync();
      const output = await open(this.outputPath, 'a+');
      try {
        await output.truncate(valid.endOffset);
        await output.sync();
      } finally {
        await output.close();
      }
      return valid;
    } finally {
      await records.close();
    }
  }

  /** Opens the spool for reading (ReadLog holds its own handles, so a sweep cannot pull files from under it). */
  async openForRead(): Promise<{ output: FileHandle; records: FileHandle }> {
    const output = await open(this.outputPath, 'r');
    try {
      return { output, records: await open(this.recordsPath, 'r') };
    } catch (e) {
      await output.close();
      throw e;
    }
  }

  /**
   * Frees the spool. The directory is first renamed out of the way (atomic), so a restart never
   * finds a half-deleted spool under the command's name; returns the deletion of the rest.
   */
  async remove(): Promise<{ deleted: Promise<void> }> {
    const trash = join(dirname(this.dir), `${TRASH_PREFIX}${basename(this.dir)}-${randomBytes(4).toString('hex')}`);
    await rename(this.dir, trash);
    return { deleted: rm(trash, { recursive: true, force: true }) };
  }
}

/** Spools being deleted; whatever a crash leaves with this prefix is deleted at the next start. */
export const TRASH_PREFIX = '.trash-';

export async function removeTrash(commandsRoot: string, names: string[]): Promise<void> {
  await Promise.all(names.filter((n) => n.startsWith(TRASH_PREFIX)).map((n) => rm(join(commandsRoot, n), { recursive: true, force: true })));
}
