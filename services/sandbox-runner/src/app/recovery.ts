import { access, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { Command } from './command';
import { isValidId } from './exec-input';
import { isSameProcess, signalGroup } from './process-group';
import { CommandSpool, removeTrash } from './spool';
import { RECORD_BYTES } from './spool-records';
import type { CommandMeta, ExitInfo } from './types';

export const LOST_REASON = 'lost: runner restarted before the command finished';

/**
 * Loads every spool left in `commandsRoot` by earlier boots. Finished commands are served as they
 * were. A command without an exit record was running when its runner went away: nobody reads its
 * pipes any more, so its output after that moment is gone and it gets an honest exit record:
 * no exit code, no signal, reason `lost: …`.
 */
export async function loadCommands(commandsRoot: string, clock: Clock, logger: Logger): Promise<Command[]> {
  await mkdir(commandsRoot, { recursive: true, mode: 0o700 });
  const out: Command[] = [];
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

async function loadOne(spool: CommandSpool, clock: Clock, logger: Logger): Promise<Command> {
  const meta = await spool.readMeta();
  let exit = await spool.readExit();
  if (exit) {
    const records = Math.floor((await stat(spool.recordsPath)).size / RECORD_BYTES);
    return new Command(meta, spool, { written: exit.endOffset, records, exit });
  }
  const valid = await spool.recover();
  exit = await markLost(spool, meta, valid.endOffset, clock, logger);
  return new Command(meta, spool, { written: valid.endOffset, records: valid.count, exit });
}

/**
 * Re-adoption seam (later issue). Today a runner restart loses the command: its stdout/stderr
 * pipes belonged to the dead runner process. Re-adopting needs an owner of the output that
 * outlives the runner (a per-command supervisor in the command's PID namespace writing the spool
 * itself); then this function would reattach instead of writing `lost`.
 * What it does now: if the process is provably the one we started (same host boot, same start
 * time: pids are reused) its group is killed, since nothing can record its output any more.
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
