import { readdir, readFile } from 'node:fs/promises';
import { readFileSync, readlinkSync } from 'node:fs';
import type { ProcessIdentity } from '../types';

/** The fields of /proc/<pid>/stat the runner uses. */
export interface ProcStat {
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  /** Start time in clock ticks since boot (field 22). */
  readonly startTicks: string;
}

/** Parses /proc/<pid>/stat. The command name (field 2) may hold spaces and ')': split after the last ')'. */
export function parseStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).split(' ');
  if (f.length < 20) return null;
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), startTicks: f[19] };
}

export async function readStat(pid: number): Promise<ProcStat | null> {
  return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''));
}

/** Synchronous, for the check right before a kill (no await between the check and the signal). */
export function readStatSync(pid: number): ProcStat | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

let bootId: string | undefined;

/** The kernel's boot id: start times compare only within one boot. */
export function hostBootId(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = '';
    }
  }
  return bootId;
}

/** "pid:[4026532177]" → "4026532177"; null when the process is gone. Inode numbers are reused: never an identity alone. */
export function nsInodeOfSync(pid: number): string | null {
  try {
    return /\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/ns/pid`))?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Who a pid is: boot id + start time. Null where /proc cannot tell. */
export function identityOfSync(pid: number): ProcessIdentity | null {
  const stat = readStatSync(pid);
  const boot = hostBootId();
  return stat && boot ? { hostBootId: boot, startTicks: stat.startTicks } : null;
}

/**
 * True only while `pid` is still the very process `identity` describes and is not a zombie
 * (a zombie runs nothing, and its pid is about to be reused). PIDs are reused: the stored pid alone
 * proves nothing.
 */
export function isSameLiveProcessSync(pid: number, identity: ProcessIdentity, nsInode: string | null = null): boolean {
  const stat = readStatSync(pid);
  if (!stat || stat.state === 'Z' || stat.state === 'X') return false;
  if (identity.hostBootId !== hostBootId() || stat.startTicks !== identity.startTicks) return false;
  return nsInode === null || nsInodeOfSync(pid) === nsInode;
}

/** Direct children of a process (/proc/<pid>/task/<pid>/children, else a scan of /proc). */
export async function childrenOf(pid: number): Promise<number[]> {
  try {
    const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text.trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    const out: number[] = [];
    for (const p of await allPids()) if ((await readStat(p))?.ppid === pid) out.push(p);
    return out;
  }
}

export async function allPids(): Promise<number[]> {
  return (await readdir('/proc')).filter((n) => /^\d+$/.test(n)).map(Number);
}

/** Live (non-zombie) members of a process group. */
export async function liveGroupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const pid of await allPids()) {
    const s = await readStat(pid);
    if (s && s.pgrp === pgid && s.state !== 'Z' && s.state !== 'X') out.push(pid);
  }
  return out;
}

/**
 * kill(2) that treats "no such process" as done. Refuses the targets that reach far more than one
 * sandbox: 0 (our own group), -1 (every process we may signal), 1 and -1-like groups, non-integers.
 */
export function killQuietly(pid: number, signal: NodeJS.Signals): boolean {
  if (!Number.isSafeInteger(pid) || Math.abs(pid) <= 1) throw new Error(`refusing to signal ${pid}`);
  try {
    process.kill(pid, signal);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
