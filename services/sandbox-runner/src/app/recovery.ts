import { access, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { Command } from './command';
import { isValidId } from './exec-input';
import { isSameProcess, signalGroup } from './process-group';
import { CommandSpool, removeTrash } from './spool';
import { RECORD_BYTES, streamTotals } from './spool-records';
import type { RawPositions } from './raw-tail';
import type { CommandMeta, ExitInfo } from './types';

export const LOST_REASON = 'lost: runner restarted before the command finished';

/** A command found on disk; `adopt` is set when it was running under an earlier runner and has a sandbox to take over. */
export interface LoadedCommand {
  readonly cmd: Command;
  readonly adopt: { readonly valid: { count: number; endOffset: number }; readonly positions: RawPositions } | null;
}

/**
 * Loads every spool left in `commandsRoot` by earlier boots. Finished commands are served as they
 * were. A command without an exit record was running when its runner went away: if it has a
 * sandbox record it is handed back for re-adoption (its output went to raw files meanwhile, so
 * nothing is lost; if it ended meanwhile, its init recorded how). A spool of an older runner
 * without a sandbox record lost its output pipes with that runner: it gets an honest exit record:
 * no exit code, no signal, reason `lost: …`.
 */
export async function loadCommands(commandsRoot: string, clock: Clock, logger: Logger): Promise<LoadedCommand[]> {
  await mkdir(commandsRoot, { recursive: true, mode: 0o700 });
  const out: LoadedCommand[] = [];
  const names = await readdir(commandsRoot);
  await removeTrash(commandsRoot, names);
  for (const name of names) {
    if (!isValidId(name)) continue;
    const spool = new CommandSpool(join(commandsRoot, name));
    try {
      out.push(await loadOne(spool, clock, logger));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !(await exists(spool.metaPath))) {
        // A crash between mkdir and the first meta.json: nothing was spawned (the spawn comes after
        // meta.json) and Exec never answered, so the id is free again.
        logger.warn({ commandId: name }, 'removing a spool that never got its meta.json');
        await (await spool.remove()).deleted;
      } else {
        logger.error({ err, commandId: name }, 'unreadable spool left as it is');
      }
    }
  }
  return out;
}

async function loadOne(spool: CommandSpool, clock: Clock, logger: Logger): Promise<LoadedCommand> {
  const meta = await spool.readMeta();
  let exit = await spool.readExit();
  if (exit) {
    const records = Math.floor((await stat(spool.recordsPath)).size / RECORD_BYTES);
    // A crash between exit.json and the cleanup leaves these behind.
    await spool.removeRaw();
    await spool.removeStatus();
    return { cmd: new Command(meta, spool, { written: exit.endOffset, records, exit }), adopt: null };
  }
  const valid = await spool.recover();
  if (meta.sandbox) {
    const files = await spool.openForRead();
    try {
      const positions = await streamTotals(files.records, valid.count);
      return { cmd: new Command(meta, spool, { written: valid.endOffset, records: valid.count, exit: null }), adopt: { valid, positions } };
    } finally {
      await Promise.allSettled([files.output.close(), files.records.close()]);
    }
  }
  exit = await markLost(spool, meta, valid.endOffset, clock, logger);
  return { cmd: new Command(meta, spool, { written: valid.endOffset, records: valid.count, exit }), adopt: null };
}

/**
 * A spool written by a runner from before sandboxes (its output went through pipes that died with
 * that runner). If the process is provably the one it started (same host boot, same start time:
 * pids are reused) its group is killed, since nothing can record its output any more.
 */
async function markLost(spool: CommandSpool, meta: CommandMeta, endOffset: number, clock: Clock, logger: Logger): Promise<ExitInfo> {
  if (meta.pid !== null && meta.processIdentity && (await isSameProcess(meta.pid, meta.processIdentity))) {
    logger.warn({ commandId: meta.commandId, pgid: meta.pid }, 'killing the orphaned process group of a lost command');
    signalGroup(meta.pid, 'SIGKILL');
  }
  const exit: ExitInfo = { exitCode: null, signal: '', endOffset, startedAtMs: meta.startedAtMs, finishedAtMs: clock.now().getTime(), reason: LOST_REASON };
  await spool.writeExit(exit);
  logger.warn({ commandId: meta.commandId, endOffset }, 'command lost by a runner restart');
  return exit;
}

const exists = (path: string) => access(path).then(
  () => true,
  () => false,
);
