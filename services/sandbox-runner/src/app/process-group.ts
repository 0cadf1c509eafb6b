import { readFile } from 'node:fs/promises';
import type { ProcessIdentity } from './types';

/**
 * Signals a whole process group. ESRCH (the group is already empty) is not an error.
 * Returns false when nothing was there to signal.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  // -0 is our own group and -1 every process we may signal.
  if (!Number.isSafeInteger(pgid) || pgid <= 1) throw new Error(`refusing to signal process group ${pgid}`);
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

let hostBootId: Promise<string> | undefined;

/** The kernel's boot id: process start times only compare within one boot. */
function readHostBootId(): Promise<string> {
  hostBootId ??= readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
    (s) => s.trim(),
    () => '',
  );
  return hostBootId;
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
async function startTicks(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Who a pid is, so a later boot of the runner can tell "the process we started" from
 * "a new process that reused its pid" (pids are reused). Null where /proc is not available.
 */
export async function processIdentity(pid: number): Promise<ProcessIdentity | null> {
  const [boot, ticks] = await Promise.all([readHostBootId(), startTicks(pid)]);
  return boot && ticks ? { hostBootId: boot, startTicks: ticks } : null;
}

/** True only when `pid` is still the very process `identity` describes. */
export async function isSameProcess(pid: number, identity: ProcessIdentity): Promise<boolean> {
  const now = await processIdentity(pid);
  return now !== null && now.hostBootId === identity.hostBootId && now.startTicks === identity.startTicks;
}
