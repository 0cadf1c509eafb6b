import { readFile } from 'node:fs/promises';
import type { Logger } from '@handplane/platform';
import type { SandboxRecord } from '../types';
import { CommandCgroup } from './cgroups';
import { parseStatus } from './init-script';
import { isSameLiveProcessSync, killQuietly, liveGroupMembers, sleep } from './proc';

/** How the command ended, as its init recorded it. */
export interface InitStatus {
  readonly exitCode: number | null;
  readonly signal: number | null;
}

/**
 * A running (or just ended) sandbox, driven only through what its record proves: every signal is
 * preceded by an identity check of the init (pid + start time + boot + namespace), so a pid that was
 * reused by another process is never signalled. Works the same for a sandbox this runner started
 * and one it re-adopted after a restart.
 */
export class Sandbox {
  readonly cgroup: CommandCgroup | null;

  constructor(readonly record: SandboxRecord) {
    this.cgroup = record.cgroups.length > 0 ? new CommandCgroup(record.cgroups) : null;
  }

  /** True while the init is still the process we started (a zombie counts as gone). */
  initAlive(): boolean {
    const r = this.record;
    return isSameLiveProcessSync(r.initPid, r.init, r.nsInode);
  }

  /**
   * SIGTERM to the whole sandbox: the init forwards it to every process of its namespace (or the
   * command's group), and in 'none' mode every cgroup member gets it directly (setsid escapees).
   * Returns false when the init is not ours any more: nothing was signalled.
   */
  async terminate(): Promise<boolean> {
    const ours = this.signalInit('SIGTERM');
    if (this.record.kind === 'none') await this.cgroup?.signalAll('SIGTERM');
    return ours;
  }

  /** SIGKILL to everything: the init (its namespace dies with it), the command's group in 'none' mode, the cgroup. */
  async kill(): Promise<void> {
    this.signalInit('SIGKILL');
    await this.cgroup?.killAll();
  }

  /**
   * Tells the init to drop the writer it holds on the command's stdin FIFO (SIGWINCH, which it never
   * forwards): once this runner's own end is closed too, the command reads end-of-file. Harmless
   * when sent twice or to an init that holds nothing.
   */
  releaseStdin(): boolean {
    return this.signalInit('SIGWINCH');
  }

  private signalInit(signal: NodeJS.Signals): boolean {
    // Checked synchronously right before kill(2): no await in between. While the init (the group's
    // parent) is alive, the command's group id cannot belong to anyone else yet.
    if (!this.initAlive()) return false;
    if (this.record.kind === 'none' && signal === 'SIGKILL') killQuietly(-this.record.commandPgid, 'SIGKILL');
    killQuietly(this.record.initPid, signal);
    return true;
  }

  /**
   * The verified exit: the init is gone (when a namespace's init exits the kernel has already
   * killed and reaped everything in it), the cgroup is empty, and in 'none' mode without cgroups
   * the command's group has no live member. Kills what is left; false if something survived `timeoutMs`.
   */
  async verifyEmpty(timeoutMs: number, logger: Logger): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.initAlive()) {
      if (Date.now() >= until) return false;
      this.signalInit('SIGKILL');
      await sleep(10);
    }
    if (this.cgroup && !(await this.cgroup.killAll(Math.max(0, until - Date.now())))) return false;
    if (this.record.kind === 'none' && !this.cgroup) {
      const left = await liveGroupMembers(this.record.commandPgid);
      if (left.length > 0) logger.warn({ pgid: this.record.commandPgid, left }, 'processes of a finished command are still in its group (no cgroup to find them by)');
      return left.length === 0;
    }
    return true;
  }
}

/** The init's status file: null while it is empty (the command runs, or the init was killed first). */
export async function readInitStatus(path: string): Promise<InitStatus | null> {
  return parseStatus(await readFile(path, 'utf8').catch(() => ''));
}
