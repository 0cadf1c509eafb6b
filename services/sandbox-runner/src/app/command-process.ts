import { execFile } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { constants as os } from 'node:os';
import { promisify } from 'node:util';
import type { Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import type { Command } from './command';
import { RawTail, type RawPositions } from './raw-tail';
import { createCommandCgroup } from './sandbox/cgroups';
import type { SandboxHost } from './sandbox/host';
import { launchSandbox, LaunchFailed } from './sandbox/launch';
import { identityOfSync } from './sandbox/proc';
import { readInitStatus, Sandbox, type InitStatus } from './sandbox/sandbox';
import type { SpoolBudget } from './spool-budget';
import type { SpoolWriter } from './spool-writer';
import { CommandStdin } from './stdin';
import type { ExitInfo } from './types';

/** How long a detaching runner waits for the command to take the stdin bytes it accepted. */
const STDIN_FLUSH_ON_DETACH_MS = 2000;

/** Makes the stdin FIFO (Node has no mkfifo): owner only. */
const makeFifo = (path: string) => promisify(execFile)('mkfifo', ['-m', '600', path]);

/** setTimeout's ceiling; longer backstops are clamped to it (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a re-adopted sandbox (not our child: no 'exit' event) is checked. */
const ADOPTED_POLL_MS = 100;
/** How long the verification waits before it logs that something is left (and keeps waiting). */
const VERIFY_MS = 5000;

export interface ProcessOptions {
  readonly host: SandboxHost;
  readonly budget: SpoolBudget;
  readonly stopGraceMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface LaunchInput {
  /** Absolute working directory, already checked to exist inside the workspace. */
  readonly cwd: string;
  /** The complete environment of the command. Never logged, never written to disk. */
  readonly env: Record<string, string>;
  /** Wall-time backstop; the runner stops the command with reason 'timeout' after it. */
  readonly timeoutMs: number;
}

/** Disk space is released in whole MiB (fewer fallocate calls; every filesystem block size divides it). */
export const RELEASE_ALIGN = 1024 * 1024;
export const alignDown = (n: number) => Math.floor(n / RELEASE_ALIGN) * RELEASE_ALIGN;

const signalName = (n: number) => Object.entries(os.signals).find(([, v]) => v === n)?.[0] ?? `SIG${n}`;

/**
 * One command's life in its sandbox: launch (or re-adoption after a runner restart), stop with
 * escalation, and the exit record, written only once the sandbox is verified empty and every byte
 * of output is in the spool. A runner that shuts down detaches: the command keeps running and the
 * next runner on the same data dir adopts it.
 */
export class CommandProcess {
  private readonly timers = new Set<NodeJS.Timeout>();
  private killAt = Infinity;
  private killSent = false;
  private finalizing: Promise<void> | null = null;
  private detaching: Promise<void> | null = null;
  private sandbox: Sandbox | null = null;
  private tail: RawTail | null = null;
  private readonly rawReleased: RawPositions = { stdout: 0, stderr: 0 };
  /** The command's stdin (WriteStdin); closed until the launch gives it a pipe. */
  stdin: CommandStdin = CommandStdin.closed('the command has not started');
  private resolveDone!: () => void;
  /** Resolves when the exit record is written (or could not be), or when the runner detached. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  constructor(
    private readonly cmd: Command,
    private readonly writer: SpoolWriter,
    private readonly opts: ProcessOptions,
  ) {}

  /** Starts the command in a new sandbox; resolves once it runs (or its launch failed and the exit record is on its way). */
  async launch(input: LaunchInput): Promise<void> {
    const { host, logger } = this.opts;
    const { meta, spool } = this.cmd;
    const cgroup = host.cgroups.parents.length > 0 ? await createCommandCgroup(host.cgroups, meta.commandId, host.limits, logger) : null;
    meta.timeoutMs = input.timeoutMs;
    const fifo = await makeFifo(spool.stdinPath).then(
      () => true,
      (err: unknown) => {
        logger.warn({ err, commandId: meta.commandId }, 'cannot make the stdin FIFO: stdin is a pipe that closes with this runner');
        return false;
      },
    );
    try {
      const { child, record, warnings, stdin } = await launchSandbox(host, {
        command: meta.command,
        cwd: input.cwd,
        env: input.env,
        stdoutPath: spool.rawPaths.stdout,
        stderrPath: spool.rawPaths.stderr,
        statusPath: spool.statusPath,
        ...(fifo ? { stdinFifo: spool.stdinPath } : {}),
        cgroup,
      });
      for (const warning of warnings) logger.warn({ commandId: meta.commandId, warning }, 'sandbox init warning');
      this.sandbox = new Sandbox(record);
      this.stdin = stdin === 'fifo' ? this.openStdin(spool.stdinPath, 0) : new CommandStdin(child.stdin);
      meta.stdin = { fifo: stdin === 'fifo', closed: false, bytes: 0 };
      // The FIFO's name goes: no other sandbox can find it in the spool and write to it or read from
      // it. A restarted runner reaches it through the init's fd 0 (`adoptStdin`).
      if (fifo) await rm(spool.stdinPath, { force: true }).catch(() => undefined);
      Object.assign(meta, { pid: record.launcherPid, processIdentity: identityOfSync(record.launcherPid), sandbox: record });
      await spool.writeMeta(meta);
      await this.follow({ stdout: 0, stderr: 0 });
      child.once('exit', () => this.onGone());
      if (child.exitCode !== null || child.signalCode !== null) this.onGone();
      // A Signal that arrived while the sandbox was starting was recorded but could not be sent.
      if (meta.stop) {
        if (meta.stop.graceMs === 0) this.sendKill();
        else void this.sandbox.terminate();
      }
    } catch (e) {
      if (!(e instanceof LaunchFailed)) throw e;
      e.child?.stdin?.destroy();
      // Nothing of the command ran; what the launcher printed (bwrap's complaint) is in the raw files.
      await cgroup?.killAll();
      await cgroup?.remove(logger);
      await this.follow({ stdout: 0, stderr: 0 });
      void this.finalize(`spawn_failed: ${e.message}`);
      return;
    }
    this.armTimers();
  }

  /** Takes over a sandbox an earlier runner started (its record and the spool's per-stream positions). */
  async adopt(positions: RawPositions): Promise<void> {
    const record = this.cmd.meta.sandbox;
    if (!record) throw new Error(`command ${this.cmd.id} has no sandbox to adopt`);
    this.sandbox = new Sandbox(record);
    this.stdin = this.adoptStdin();
    await this.follow(positions);
    this.armTimers();
    if (!this.sandbox.initAlive()) return this.onGone();
    const poll = setInterval(() => {
      if (!this.sandbox?.initAlive()) this.onGone();
    }, ADOPTED_POLL_MS);
    this.timers.add(poll);
  }

  /**
   * Opens this runner's end of the stdin FIFO at `path` (never blocking: without a reader, the
   * command and its init are gone, and stdin counts as closed) and counts on from `bytes` already
   * written.
   */
  private openStdin(path: string, bytes: number): CommandStdin {
    const { spool, meta } = this.cmd;
    let fd: number;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (err) {
      return CommandStdin.closed(`the command no longer reads its stdin (${(err as NodeJS.ErrnoException).code ?? String(err)})`, bytes);
    }
    let stream: Socket;
    try {
      stream = new Socket({ fd, readable: false, writable: true });
    } catch (err) {
      closeSync(fd);
      this.opts.logger.error({ err, commandId: meta.commandId }, 'cannot write to the stdin FIFO');
      return CommandStdin.closed('the runner could not open the stdin FIFO', bytes);
    }
    return new CommandStdin(stream, undefined, {
      persist: async (state) => {
        meta.stdin = { fifo: true, ...state };
        await spool.writeMeta(meta).catch((err: unknown) => this.opts.logger.error({ err, commandId: meta.commandId }, 'could not save the stdin state; a restarted runner may count its bytes from an older total'));
      },
      release: () => void this.sandbox?.releaseStdin(),
    }, bytes);
  }

  /** Stdin after a runner restart: the FIFO again (closed if it was closed on request), or closed for spools without one. */
  private adoptStdin(): CommandStdin {
    const s = this.cmd.meta.stdin;
    // Spools of runners before the FIFO: the pipe's write end lived in the runner that started the command, and closed with it.
    if (!s?.fifo) return CommandStdin.closed('the runner restarted and re-adopted the command; its stdin closed with the earlier runner (the command read end-of-file)');
    if (s.closed) {
      // The close was saved before the init was told: tell it again (harmless when it was).
      this.sandbox?.releaseStdin();
      return CommandStdin.closed('closed on request', s.bytes);
    }
    // The FIFO has no name any more: the init's fd 0 is its read end, and opening that for writing
    // reaches the same FIFO (the identity of the init was checked before the adoption).
    const initPid = this.cmd.meta.sandbox?.initPid;
    if (!initPid || !this.sandbox?.initAlive()) return CommandStdin.closed('the command has ended', s.bytes);
    return this.openStdin(`/proc/${initPid}/fd/0`, s.bytes);
  }

  /** Backpressure from the spool writer. */
  setPaused(paused: boolean): void {
    this.tail?.setPaused(paused);
  }

  /** True once the command ended and its exit record is being written: nothing left to signal. */
  get finishing(): boolean {
    return this.finalizing !== null || this.detaching !== null;
  }

  /** SIGTERM to the whole sandbox now, SIGKILL after `graceMs`. Recorded in meta.json, so a restarted runner finishes the escalation. */
  stop(graceMs: number, reason: string): void {
    if (this.finishing) return;
    this.markStopping(reason, graceMs);
    void this.sandbox?.terminate().catch((err) => this.opts.logger.error({ err, commandId: this.cmd.id }, 'could not signal the sandbox'));
    this.scheduleKill(graceMs);
  }

  /**
   * SIGKILL to the whole sandbox now. The reason is kept even when the command is already ending
   * (a spool that filled up while the last bytes were copied still explains the exit record).
   */
  kill(reason: string): void {
    this.cmd.markStopping(reason);
    if (this.finishing) return;
    this.markStopping(reason, 0);
    this.sendKill();
  }

  /**
   * Releases the disk blocks of raw output already copied into the (then synced) spool. Punching
   * an already punched range is a no-op, so a restarted runner may start again from 0.
   */
  async releaseRaw(punch: (path: string, from: number, to: number) => Promise<boolean>): Promise<void> {
    const tail = this.tail;
    if (!tail || this.finishing) return;
    const pos = tail.positions;
    await this.writer.sync();
    for (const s of ['stdout', 'stderr'] as const) {
      const to = alignDown(pos[s]);
      if (to > this.rawReleased[s] && (await punch(this.cmd.spool.rawPaths[s], this.rawReleased[s], to))) this.rawReleased[s] = to;
    }
  }

  /** Stops following without touching the command (runner shutdown in 'detach' mode). */
  detach(): Promise<void> {
    if (this.finalizing) return this.finalizing;
    this.detaching ??= (async () => {
      this.clearTimers();
      // Bytes already accepted are flushed into the FIFO, so the next runner's command still reads them.
      const lost = await this.stdin.detach(STDIN_FLUSH_ON_DETACH_MS);
      if (lost > 0) this.opts.logger.warn({ commandId: this.cmd.id, bytes: lost }, 'stdin bytes the command did not read in time were lost with this runner');
      await this.tail?.close();
      await this.writer.close();
      this.resolveDone();
    })();
    return this.detaching;
  }

  private markStopping(reason: string, graceMs: number): void {
    this.cmd.markStopping(reason);
    if (this.cmd.meta.stop) return;
    this.cmd.meta.stop = { reason, atMs: this.opts.clock.now().getTime(), graceMs };
    this.cmd.spool.writeMeta(this.cmd.meta).catch((err) => this.opts.logger.error({ err, commandId: this.cmd.id }, 'could not record the stop in meta.json'));
  }

  private async follow(positions: RawPositions): Promise<void> {
    this.tail = await RawTail.start(this.cmd.spool.rawPaths, positions, this.writer, this.opts.budget, {
      onBudgetExhausted: (kept) => {
        this.opts.logger.error({ commandId: this.cmd.id, kept, maxBytes: this.opts.budget.maxBytes }, 'spool budget exhausted: killing the command');
        this.kill(`spool_full: the runner's spool reached RUNNER_SPOOL_MAX_BYTES (${this.opts.budget.maxBytes} bytes); the output before that is kept`);
      },
    });
  }

  /** The wall-time backstop and a stop in progress, both from meta.json (so they survive a restart). */
  private armTimers(): void {
    const { meta } = this.cmd;
    const now = this.opts.clock.now().getTime();
    if (meta.stop) {
      this.cmd.markStopping(meta.stop.reason);
      if (meta.stop.graceMs === 0) this.sendKill();
      else this.scheduleKill(meta.stop.atMs + meta.stop.graceMs - now);
    }
    if (meta.timeoutMs && meta.timeoutMs > 0) this.after(meta.startedAtMs + meta.timeoutMs - now, () => this.stop(this.opts.stopGraceMs, 'timeout'));
  }

  private scheduleKill(ms: number): void {
    const at = this.opts.clock.monotonicMs() + ms;
    if (at >= this.killAt) return;
    this.killAt = at;
    this.after(ms, () => this.sendKill());
  }

  private sendKill(): void {
    if (this.finishing || !this.sandbox) return;
    this.killSent = true;
    void this.sandbox.kill().catch((err) => this.opts.logger.error({ err, commandId: this.cmd.id }, 'could not kill the sandbox'));
  }

  private after(ms: number, fn: () => void): void {
    // Nothing to time once the command ended (a quick command can end before its launch returns).
    if (this.finishing) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    // The gRPC server keeps a runner alive; a command's timer alone must not (tests, clean shutdown).
    t.unref();
    this.timers.add(t);
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private onGone(): void {
    if (!this.finishing) void this.finalize('');
  }

  private finalize(failure: string): Promise<void> {
    this.finalizing ??= this.writeExit(failure)
      .catch((err) => this.opts.logger.error({ err, commandId: this.cmd.id }, 'could not write the exit record'))
      .finally(() => this.resolveDone());
    return this.finalizing;
  }

  /** Never before the sandbox is empty: the exit record is the runner's word that nothing of the command runs. */
  private async waitVerified(): Promise<void> {
    const sandbox = this.sandbox;
    if (!sandbox) return;
    while (!(await sandbox.verifyEmpty(VERIFY_MS, this.opts.logger))) {
      this.opts.logger.error({ commandId: this.cmd.id, record: sandbox.record }, `sandbox not empty ${VERIFY_MS} ms after its init ended: still killing`);
    }
  }

  private async writeExit(failure: string): Promise<void> {
    this.clearTimers();
    this.stdin.destroy('the command ended');
    await this.waitVerified();
    const status = await readInitStatus(this.cmd.spool.statusPath);
    await this.tail?.finish();
    const synced = await this.writer.sync().then(
      () => null,
      (e: Error) => e,
    );
    await this.writer.close();
    const oom = (await this.sandbox?.cgroup?.oomKilled()) ?? false;
    const broken = this.writer.error ?? synced;
    const exit: ExitInfo = {
      exitCode: status?.exitCode ?? null,
      signal: this.signalOf(status, oom),
      endOffset: this.cmd.written,
      startedAtMs: this.cmd.meta.startedAtMs,
      finishedAtMs: this.opts.clock.now().getTime(),
      reason: failure || this.cmd.stopReason || (oom ? `memory_limit: killed by the kernel at the command's memory limit (${this.opts.host.limits.memoryMaxBytes} bytes)` : '') || (broken ? `spool_failed: ${broken.message}` : '') || (status || this.killSent || !this.sandbox ? '' : 'sandbox_lost: the sandbox init ended without recording how the command ended'),
    };
    // Raw files first: on a full disk their space is what lets exit.json be written.
    await this.cmd.spool.removeRaw().catch(() => undefined);
    try {
      await this.cmd.spool.writeExit(exit);
    } finally {
      // Even if exit.json could not be written the sandbox is gone: readers must not wait forever.
      this.cmd.finish(exit);
    }
    await this.cmd.spool.removeStatus().catch(() => undefined);
    await this.sandbox?.cgroup?.remove(this.opts.logger);
    this.opts.logger.info({ commandId: this.cmd.id, exitCode: exit.exitCode, signal: exit.signal, endOffset: exit.endOffset, reason: exit.reason }, 'command finished');
  }

  private signalOf(status: InitStatus | null, oom: boolean): string {
    if (status) return status.signal === null ? '' : signalName(status.signal);
    // The init itself was killed (by the stop's SIGKILL, or the OOM killer): nothing recorded the command's end.
    return this.killSent || oom ? 'SIGKILL' : '';
  }
}
