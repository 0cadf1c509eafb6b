import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { assertNever, IllegalState, NotFound, TooLarge, Unavailable, ValidationError, type Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { Command } from './command';
import { alignDown, CommandProcess } from './command-process';
import { OffsetOutOfRange } from './errors';
import { parseExec, requireCommandId, type RawExec } from './exec-input';
import { decideSignal } from './fence';
import { readLog, type ReadLogOptions } from './log-reader';
import { loadCommands, type LoadedCommand } from './recovery';
import { removeStrayCgroups } from './sandbox/cgroups';
import type { SandboxHost } from './sandbox/host';
import { CommandSpool } from './spool';
import { STDIN_MAX_WRITE_BYTES, type StdinWriteResult } from './stdin';
import { SpoolBudget } from './spool-budget';
import { punchHole } from './spool-release';
import type { SpoolWriter, SpoolWriterEvents } from './spool-writer';
import { sameGeneration, type CommandMeta, type CommandView, type ExecInput, type Generation, type LogItem, type SignalKind } from './types';
import { probePort } from './probe';
import { commandEnv, probeWorkspacePath, resolveWorkspaceCwd } from './workspace';

export interface RunnerOptions {
  /** Absolute data directory: `commands/` (spools) and `workspaces/` live under it. */
  readonly dataDir: string;
  readonly bootId: string;
  readonly capacity: number;
  readonly stopGraceMs: number;
  /** Backstop for a command whose Exec carries no timeout. */
  readonly defaultTimeoutMs: number;
  readonly retentionMs: number;
  /** How commands are contained (found once at start: detectSandboxHost). */
  readonly sandbox: SandboxHost;
  /** RUNNER_SPOOL_MAX_BYTES (0 = no limit). */
  readonly spoolMaxBytes: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface SignalInput {
  readonly commandId: string;
  /** '' when the caller did not say; otherwise it must be the command's task. */
  readonly taskId: string;
  readonly generation: Generation | undefined;
  readonly kind: SignalKind;
  readonly graceMs: number;
  readonly reason: string;
}

export interface StdinInput {
  readonly commandId: string;
  /** '' when the caller did not say; otherwise it must be the command's task. */
  readonly taskId: string;
  readonly generation: Generation | undefined;
  readonly data: Buffer;
  readonly close: boolean;
}

/**
 * The runner's application core: the table of commands and the six operations of the gRPC
 * service, in plain TypeScript (the gRPC edge only maps messages and errors).
 */
export class Runner {
  private readonly commands = new Map<string, Command>();
  private readonly processes = new Map<string, CommandProcess>();
  private readonly starting = new Map<string, Promise<Command>>();
  private readonly budget: SpoolBudget;
  private readonly releasing = new Map<string, Promise<void>>();
  private closing = false;

  private constructor(private readonly opts: RunnerOptions) {
    this.budget = new SpoolBudget(opts.spoolMaxBytes);
  }

  private get commandsRoot(): string {
    return join(this.opts.dataDir, 'commands');
  }

  /** Opens the data directory, loads what earlier boots left there and re-adopts the commands still running. */
  static async open(opts: RunnerOptions): Promise<Runner> {
    const r = new Runner(opts);
    await mkdir(join(opts.dataDir, 'workspaces'), { recursive: true, mode: 0o700 });
    const loaded = await loadCommands(r.commandsRoot, opts.clock, opts.logger);
    for (const { cmd } of loaded) {
      r.commands.set(cmd.id, cmd);
      r.budget.take(cmd.written - (cmd.meta.freedOffset ?? 0));
    }
    const adopting = loaded.filter((l) => l.adopt);
    await removeStrayCgroups(opts.sandbox.cgroups, new Set(adopting.map((l) => l.cmd.id)), opts.logger);
    for (const l of adopting) await r.adopt(l);
    opts.logger.info({ commands: r.commands.size, adopted: adopting.length }, 'spool loaded');
    return r;
  }

  private async adopt({ cmd, adopt }: LoadedCommand): Promise<void> {
    if (!adopt) return;
    const ref: { proc?: CommandProcess } = {};
    const writer = await cmd.spool.reopen(adopt.valid, this.writerEvents(cmd, ref));
    const proc = (ref.proc = this.process(cmd, writer));
    await proc.adopt(adopt.positions);
    this.opts.logger.info({ commandId: cmd.id, generation: cmd.meta.generation, sandbox: cmd.meta.sandbox?.kind, stopping: cmd.state === 'stopping' }, 'command re-adopted');
  }

  /** Registers the process of a command (before anything is awaited, so a Signal during the launch finds it). */
  private process(cmd: Command, writer: SpoolWriter): CommandProcess {
    const { sandbox: host, stopGraceMs, clock, logger } = this.opts;
    const proc = new CommandProcess(cmd, writer, { host, budget: this.budget, stopGraceMs, clock, logger });
    this.processes.set(cmd.id, proc);
    void proc.done.then(() => this.processes.delete(cmd.id));
    return proc;
  }

  /** The spool writer's events reach the process through `ref` (the writer exists before the process it serves). */
  private writerEvents(cmd: Command, ref: { proc?: CommandProcess }): SpoolWriterEvents {
    const { logger } = this.opts;
    return {
      onWritten: (offset, records) => cmd.advance(offset, records),
      onPressure: (paused) => {
        logger.debug({ commandId: cmd.id, paused }, 'spool backpressure');
        ref.proc?.setPaused(paused);
      },
      onFailed: (err) => {
        const full = ['ENOSPC', 'EDQUOT'].includes((err as NodeJS.ErrnoException).code ?? '');
        logger.error({ err, commandId: cmd.id }, 'spool write failed: killing the command');
        ref.proc?.kill(full ? `spool_full: no space left for the spool (${err.message}); output up to offset ${cmd.written} kept` : `spool_failed: ${err.message}`);
      },
    };
  }

  /** Commands whose exit record is not written yet. */
  get running(): number {
    return this.processes.size + this.starting.size;
  }

  /** Starts a command, or answers the one already started with this id (created=false). */
  async exec(raw: RawExec): Promise<{ view: CommandView; created: boolean }> {
    const input = parseExec(raw);
    // No await unless another Exec of this id is in flight: the check and the claim below must
    // happen in the same tick, or two concurrent Execs would both launch.
    const pending = this.starting.get(input.commandId);
    const known = this.commands.get(input.commandId) ?? (pending ? await pending : undefined);
    if (known) return { view: this.sameAttempt(known, input.generation).view(), created: false };
    if (this.closing) throw new Unavailable('runner is shutting down');
    if (this.running >= this.opts.capacity) throw new Unavailable(`runner at capacity (${this.opts.capacity} commands running)`);
    const launching = this.launch(input);
    this.starting.set(input.commandId, launching);
    try {
      return { view: (await launching).view(), created: true };
    } finally {
      this.starting.delete(input.commandId);
    }
  }

  private sameAttempt(cmd: Command, generation: Generation): Command {
    const g = cmd.meta.generation;
    if (!sameGeneration(g, generation)) {
      throw new IllegalState(`command ${cmd.id} already runs generation (epoch ${g.epoch}, attempt ${g.attempt}), not (epoch ${generation.epoch}, attempt ${generation.attempt}): a new attempt needs a new commandId`);
    }
    return cmd;
  }

  private async launch(input: ExecInput): Promise<Command> {
    const { workspace, cwd } = await resolveWorkspaceCwd(join(this.opts.dataDir, 'workspaces'), input.conversationId, input.cwd);
    const { commandId, taskId, conversationId, tenant, generation, command } = input;
    const meta: CommandMeta = { v: 1, commandId, taskId, conversationId, tenant, generation, command, cwd: input.cwd, startedAtMs: this.opts.clock.now().getTime(), pid: null, processIdentity: null, runnerBootId: this.opts.bootId, ackedOffset: 0 };
    const spool = CommandSpool.forCommand(this.commandsRoot, commandId);
    const cmd = new Command(meta, spool, { written: 0, records: 0, exit: null });
    const ref: { proc?: CommandProcess } = {};
    const writer = await spool.create(meta, this.writerEvents(cmd, ref));
    this.commands.set(commandId, cmd);
    const proc = (ref.proc = this.process(cmd, writer));
    await proc.launch({ cwd, env: commandEnv(workspace, input.env), timeoutMs: input.timeoutMs || this.opts.defaultTimeoutMs });
    this.opts.logger.info({ commandId, taskId, conversationId, generation, pid: meta.pid, sandbox: meta.sandbox?.kind }, 'command started');
    return cmd;
  }

  /**
   * Stops or kills a command, only if the request targets the task and generation it runs
   * (fence.ts). A stale request is refused, logged, and reaches no process.
   */
  signal(req: SignalInput): { outcome: 'delivered' | 'already_exited'; view: CommandView } {
    const cmd = this.get(req.commandId);
    const proc = this.processes.get(cmd.id);
    const decision = decideSignal({ taskId: cmd.meta.taskId, generation: cmd.meta.generation, ended: !!cmd.exit || !proc || proc.finishing }, req);
    switch (decision.type) {
      case 'invalid':
        throw new ValidationError(decision.reason, [decision.reason]);
      case 'stale':
        this.opts.logger.warn({ commandId: cmd.id, requested: { taskId: req.taskId, generation: req.generation }, current: { taskId: cmd.meta.taskId, generation: cmd.meta.generation }, kind: req.kind, reason: req.reason }, 'stale signal dropped');
        throw new IllegalState(`${decision.reason} (command ${cmd.id})`);
      case 'already_exited':
        return { outcome: 'already_exited', view: cmd.view() };
      case 'deliver':
        this.opts.logger.info({ commandId: cmd.id, kind: req.kind, reason: req.reason }, 'signal delivered');
        if (req.kind === 'stop') proc?.stop(req.graceMs || this.opts.stopGraceMs, 'stopped');
        else proc?.kill('killed');
        return { outcome: 'delivered', view: cmd.view() };
      default:
        return assertNever(decision);
    }
  }

  /**
   * Writes to a running command's stdin (then closes it when asked), fenced like `signal`: a stale
   * task or generation is refused and nothing is written. Never logs the data (it may be a secret).
   */
  async writeStdin(req: StdinInput): Promise<StdinWriteResult> {
    if (req.data.length > STDIN_MAX_WRITE_BYTES) throw new TooLarge(`stdin data is ${req.data.length} bytes; at most ${STDIN_MAX_WRITE_BYTES} per call`);
    const cmd = this.get(req.commandId);
    const proc = this.processes.get(cmd.id);
    const decision = decideSignal({ taskId: cmd.meta.taskId, generation: cmd.meta.generation, ended: !!cmd.exit || !proc || proc.finishing }, req, 'nothing was written');
    switch (decision.type) {
      case 'invalid':
        throw new ValidationError(decision.reason, [decision.reason]);
      case 'stale':
        this.opts.logger.warn({ commandId: cmd.id, requested: { taskId: req.taskId, generation: req.generation }, current: { taskId: cmd.meta.taskId, generation: cmd.meta.generation }, bytes: req.data.length }, 'stale stdin write dropped');
        throw new IllegalState(`${decision.reason} (command ${cmd.id})`);
      case 'already_exited':
        throw new IllegalState(`command ${cmd.id} has exited; its stdin is gone`);
      case 'deliver': {
        const r = await proc!.stdin.write(req.data, req.close);
        this.opts.logger.info({ commandId: cmd.id, bytes: r.written, closed: r.closed }, 'stdin written');
        return r;
      }
      default:
        return assertNever(decision);
    }
  }

  /**
   * A condition wait's probe (issue 10.1) in the sandbox of `commandId`: a port open on the host's
   * loopback (commands share the host's network namespace), or a path inside its workspace.
   */
  async probe(commandId: string, what: { port: number } | { path: string }): Promise<{ satisfied: boolean; detail: string }> {
    const cmd = this.get(commandId);
    if ('port' in what) {
      if (!Number.isInteger(what.port) || what.port < 1 || what.port > 65535) throw new ValidationError(`port ${what.port} is not a TCP port`, ['port: 1 to 65535']);
      return probePort(what.port);
    }
    return probeWorkspacePath(join(this.opts.dataDir, 'workspaces'), cmd.meta.conversationId, what.path);
  }

  /** Spooled output from an offset (see log-reader). */
  readLog(commandId: string, opts: ReadLogOptions): AsyncGenerator<LogItem, void, undefined> {
    return readLog(this.get(commandId), opts);
  }

  /**
   * Records the committed cursor (monotonic) and answers the cursor now in force. Acknowledged
   * bytes are then released (in the background, whole MiB): their spool blocks, and the raw
   * output already copied. Nothing else frees a running command's spool space.
   */
  async ack(commandId: string, offset: number): Promise<number> {
    const cmd = this.get(commandId);
    const available = cmd.exit?.endOffset ?? cmd.written;
    if (offset > available) throw new OffsetOutOfRange(offset, available, 'ack offset');
    if (offset > cmd.meta.ackedOffset) {
      // On disk first, then in memory: the sweep frees a spool once the in-memory ack reaches the
      // end, and must not delete the directory under this write.
      await cmd.spool.writeMeta({ ...cmd.meta, ackedOffset: offset });
      cmd.meta.ackedOffset = Math.max(cmd.meta.ackedOffset, offset);
      this.scheduleRelease(cmd);
    }
    return cmd.meta.ackedOffset;
  }

  /** One release at a time per command; an ack that arrives meanwhile is covered by a second pass. */
  private scheduleRelease(cmd: Command): void {
    const prev = this.releasing.get(cmd.id) ?? Promise.resolve();
    const next = prev.then(() => this.release(cmd)).catch((err) => this.opts.logger.warn({ err, commandId: cmd.id }, 'spool release failed'));
    this.releasing.set(cmd.id, next);
    void next.then(() => {
      if (this.releasing.get(cmd.id) === next) this.releasing.delete(cmd.id);
    });
  }

  private async release(cmd: Command): Promise<void> {
    const from = cmd.meta.freedOffset ?? 0;
    const to = alignDown(cmd.meta.ackedOffset);
    const { logger } = this.opts;
    if (to > from && this.commands.get(cmd.id) === cmd && (await punchHole(cmd.spool.outputPath, from, to, logger))) {
      cmd.meta.freedOffset = to;
      await cmd.spool.writeMeta(cmd.meta);
      this.budget.give(to - from);
    }
    await this.processes.get(cmd.id)?.releaseRaw((path, a, b) => punchHole(path, a, b, logger));
  }

  /** Bytes of output the spools hold now (what RUNNER_SPOOL_MAX_BYTES limits). */
  get spoolBytes(): number {
    return this.budget.used;
  }

  status(commandId: string): CommandView {
    return this.get(commandId).view();
  }

  list(conversationId = ''): CommandView[] {
    return [...this.commands.values()]
      .filter((c) => !conversationId || c.meta.conversationId === conversationId)
      .map((c) => c.view())
      .sort((a, b) => a.startedAtMs - b.startedAtMs || a.commandId.localeCompare(b.commandId));
  }

  /** Frees the spool of commands that exited, were acked to their end and outlived the retention. */
  async sweep(): Promise<string[]> {
    const now = this.opts.clock.now().getTime();
    const freed: string[] = [];
    for (const cmd of [...this.commands.values()]) {
      const exit = cmd.exit;
      if (!exit || cmd.meta.ackedOffset < exit.endOffset || now - exit.finishedAtMs < this.opts.retentionMs) continue;
      const { deleted } = await cmd.spool.remove();
      this.commands.delete(cmd.id);
      await deleted;
      this.budget.give(exit.endOffset - (cmd.meta.freedOffset ?? 0));
      freed.push(cmd.id);
    }
    if (freed.length > 0) this.opts.logger.info({ freed: freed.length }, 'spool freed');
    return freed;
  }

  /**
   * 'detach' (the default): stops following the running commands and leaves them running; the
   * next runner on this data dir re-adopts them. 'stop': ends them (SIGTERM, SIGKILL after
   * `graceMs`) and waits for their exit records.
   */
  async shutdown(graceMs: number, mode: 'detach' | 'stop'): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.starting.values()]);
    const procs = [...this.processes.values()];
    if (mode === 'detach') {
      await Promise.all(procs.map((p) => p.detach()));
      if (procs.length > 0) this.opts.logger.info({ running: procs.length }, 'runner stopped; its commands keep running for the next runner to adopt');
      return;
    }
    for (const p of procs) p.stop(graceMs, 'runner_shutdown');
    await Promise.all(procs.map((p) => p.done));
  }

  private get(commandId: string): Command {
    const cmd = this.commands.get(requireCommandId(commandId));
    if (!cmd) throw new NotFound(`no command ${JSON.stringify(commandId)} on this runner`);
    return cmd;
  }
}
