import { execFile } from 'node:child_process';
import type { Logger } from '@handplane/platform';
import { which } from './sandbox/host';

let fallocate: string | null | undefined;
let warned = false;

/**
 * Gives the disk blocks of [from, to) of a file back without changing its size or any offset
 * (fallocate --punch-hole, util-linux: Node has no fallocate). Reads of the range then return zeros,
 * so callers only punch what nobody may read any more. False when the tool or the filesystem
 * cannot (logged once): the bytes then stay on disk until the spool is freed.
 */
export function punchHole(path: string, from: number, to: number, logger: Logger): Promise<boolean> {
  if (to <= from) return Promise.resolve(true);
  fallocate ??= which('fallocate');
  const bin = fallocate;
  if (!bin) return Promise.resolve(warnOnce(logger, new Error('fallocate not found')));
  return new Promise((resolve) => {
    execFile(bin, ['--punch-hole', '--offset', String(from), '--length', String(to - from), path], { timeout: 10_000 }, (err) => resolve(err ? warnOnce(logger, err) : true));
  });
}

function warnOnce(logger: Logger, err: Error): false {
  if (!warned) logger.warn({ err }, 'cannot release acknowledged spool space (fallocate --punch-hole): it is freed with the whole spool instead');
  warned = true;
  return false;
}
