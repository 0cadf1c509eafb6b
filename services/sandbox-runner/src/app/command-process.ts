import { spawn, type ChildProcess } from 'node:child_process';
import type { Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import type { Command } from './command';
import { processIdentity, signalGroup, waitGroupGone } from './process-group';
import type { SpoolWriter } from './spool-writer';

/** setTimeout's ceiling; longer backstops are clamped to it (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface ProcessOptions {
  /** Absolute working directory, already checked to exist inside the workspace. */
  readonly cwd: string;
  /** The complete environment of the child. Never logged, never written to disk. */
  readonly env: Record<string, string>;
  /** Wall-time backstop; the runner stops the command with reason 'timeout' after it. */
  readonly timeoutMs: number;
  readonly stopGraceMs: number;
  /** After the main process exits, how long descendants may keep its pipes open before the group is killed. */
  readonly afterExitMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * `bash -c <command>` in its own process group, its output appended to the spool, and the exit
 * record written once every byte is on disk. Pitfalls handled: 'exit' can come before the last
 * output, and 'close' never comes while a descendant holds the pipes, so the group is killed
 * `afterExitMs` after the main process exits.
 *
 * Containment seam (later issue): a process group does not hold `setsid` or double forks; the
 * spawn here is where a PID namespace / cgroup wrapper goes.
 */
export class CommandProcess {
  private readonly child: ChildProcess;
  private readonly timers = new Set<NodeJS.Timeout>();
  private killAt = Infinity;
  private finalizing: Promise<void> | null = null;
  private resolveDone!: () => void;
  /** Resolves when the exit record is written (or could not be). */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  private constructor(
    private readonly cmd: Command,
    private readonly writer: SpoolWriter,
    private readonly opts: ProcessOptions,
  ) {
    this.child = spawn('bash', ['-c', cmd.meta.command], { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.cmd.meta.pid = this.child.pid ?? null;
    this.wire();
  }

  /** Spawns the command (synchronously: its output starts flowing into the spool at once). */
  static spawn(cmd: Command, writer: SpoolWriter, opts: ProcessOptions): CommandProcess {
    return new CommandProcess(cmd, writer, opts);
  }

  /** Puts the pid and its identity in meta.json, so a later boot can find the process again. */
  async recordIdentity(): Promise<void> {
    const pid = this.child.pid;
    if (pid === undefined) return;
    this.cmd.meta.processIdentity = await processIdentity(pid);
    await this.cmd.spool.writeMeta(this.cmd.meta);
  }

  /** Backpressure from the spool writer: stop reading the pipes (the child then blocks on write). */
  setPaused(paused: boolean): void {
    for (const s of [this.child.stdout, this.child.stderr]) {
      if (paused) s?.pause();
      else s?.resume();
    }
  }

  /** True once the command ended and its exit record is being written: nothing left to signal. */
  get finishing(): boolean {
    return this.finalizing !== null;
  }

  /** SIGTERM to the whole group now, SIGKILL after `graceMs`. */
  stop(graceMs: number, reason: string): void {
    if (this.finishing) return;
    this.cmd.markStopping(reason);
    this.signal('SIGTERM');
    const at = this.opts.clock.monotonicMs() + graceMs;
    if (at < this.killAt) {
      this.killAt = at;
      this.after(graceMs, () => this.signal('SIGKILL'));
    }
  }

  /** SIGKILL to the whole group now. */
  kill(reason: string): void {
    if (this.finishing) return;
    this.cmd.markStopping(reason);
    this.signal('SIGKILL');
  }

  private signal(sig: NodeJS.Signals): void {
    const pgid = this.cmd.meta.pid;
    // Never signal a group after its exit record: the pid may belong to someone else by then.
    if (pgid === null || this.cmd.exit) return;
    try {
      signalGroup(pgid, sig);
    } catch (err) {
      this.opts.logger.error({ err, commandId: this.cmd.id, sig }, 'could not signal the process group');
    }
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, Math.min(ms, MAX_TIMER_MS));
    this.timers.add(t);
  }

  private wire(): void {
    const { child, writer, opts } = this;
    child.stdout?.on('data', (d: Buffer) => writer.append('stdout', d));
    child.stderr?.on('data', (d: Buffer) => writer.append('stderr', d));
    child.on('exit', () => this.onMainExit());
    child.on('close', (code, signal) => void this.finalize(code, signal, ''));
    child.on('error', (err) => {
      if (child.pid === undefined) void this.finalize(null, null, `spawn_failed: ${err.message}`);
      else opts.logger.warn({ err, commandId: this.cmd.id }, 'child process error');
    });
    if (opts.timeoutMs > 0) this.after(opts.timeoutMs, () => this.stop(opts.stopGraceMs, 'timeout'));
  }

  private onMainExit(): void {
    const { logger, afterExitMs } = this.opts;
    this.after(afterExitMs, () => {
      if (this.finalizing) return;
      logger.warn({ commandId: this.cmd.id }, 'descendants still hold the output open after the command exited: killing its process group');
      this.signal('SIGKILL');
      // A descendant that left the group (setsid) keeps the pipes open forever; stop reading them.
      this.after(afterExitMs, () => {
        if (this.finalizing) return;
        logger.warn({ commandId: this.cmd.id }, 'output still open after the group was killed (a process escaped the group): closing the pipes');
        this.child.stdout?.destroy();
        this.child.stderr?.destroy();
      });
    });
  }

  private finalize(code: number | null, signal: NodeJS.Signals | null, failure: string): Promise<void> {
    this.finalizing ??= this.writeExit(code, signal, failure)
      .catch((err) => this.opts.logger.error({ err, commandId: this.cmd.id }, 'could not write the exit record'))
      .finally(() => this.resolveDone());
    return this.finalizing;
  }

  private async writeExit(code: number | null, signal: NodeJS.Signals | null, failure: string): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const pgid = this.cmd.meta.pid;
    if (pgid !== null) {
      // Whatever is left in the group (children that closed their output) dies with the command.
      this.signal('SIGKILL');
      if (!(await waitGroupGone(pgid, 2000))) this.opts.logger.warn({ commandId: this.cmd.id, pgid }, 'process group still present 2 s after SIGKILL');
    }
    // All output on disk and synced before the exit record exists.
    const synced = await this.writer.sync().then(
      () => null,
      (e: Error) => e,
    );
    await this.writer.close();
    const broken = this.writer.error ?? synced;
    const spoolFailure = broken ? `spool_failed: ${broken.message}` : '';
    const exit = {
      exitCode: code,
      signal: signal ?? '',
      endOffset: this.cmd.written,
      startedAtMs: this.cmd.meta.startedAtMs,
      finishedAtMs: this.opts.clock.now().getTime(),
      reason: failure || spoolFailure || this.cmd.stopReason || '',
    };
    try {
      await this.cmd.spool.writeExit(exit);
    } finally {
      // Even if exit.json could not be written the process is gone: readers must not wait forever.
      this.cmd.finish(exit);
    }
    this.opts.logger.info({ commandId: this.cmd.id, exitCode: exit.exitCode, signal: exit.signal, endOffset: exit.endOffset, reason: exit.reason }, 'command finished');
  }
}
