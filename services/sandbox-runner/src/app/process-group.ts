import { readdir, readFile } from 'node:fs/promises';
import type { ProcessIdentity } from './types';

/**
 * Signals a whole process group. ESRCH (the group is already empty) is not an error.
 * Returns false when nothing was there to signal.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

/** True while any process (a zombie included) is still in the group. */
export function groupExists(pgid: number): boolean {
  return signalGroup(pgid, 0 as unknown as NodeJS.Signals);
}

/**
 * True while a member of the group is alive (not a zombie). A killed descendant whose parent died
 * too is re-parented to pid 1 and stays a zombie until pid 1 reaps it, which some inits do lazily
 * (seconds here) and a bare `node` as pid 1 never does: a zombie runs nothing and holds no files,
 * so it does not count. Without /proc, any member counts.
 */
export async function groupHasLiveMember(pgid: number): Promise<boolean> {
  if (!groupExists(pgid)) return false;
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((n) => /^\d+$/.test(n));
  } catch {
    return true;
  }
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // Fields after the command name: state, ppid, pgrp, …
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

/** Waits until no live process is left in the group, up to `timeoutMs`; false if one still is. */
export async function waitGroupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (await groupHasLiveMember(pgid)) {
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
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
