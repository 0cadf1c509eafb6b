import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { IllegalState, NotFound, Unavailable, ValidationError, type Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { Command } from './command';
import { CommandProcess } from './command-process';
import { OffsetOutOfRange } from './errors';
import { parseExec, requireCommandId, type RawExec } from './exec-input';
import { readLog, type ReadLogOptions } from './log-reader';
import { loadCommands } from './recovery';
import { CommandSpool } from './spool';
import { sameGeneration, type CommandView, type ExecInput, type Generation, type LogItem, type SignalKind } from './types';
import { commandEnv, resolveWorkspaceCwd } from './workspace';

export interface RunnerOptions {
  /** Absolute data directory: `commands/` (spools) and `workspaces/` live under it. */
  readonly dataDir: string;
  readonly bootId: string;
  readonly capacity: number;
  readonly stopGraceMs: number;
  /** Backstop for a command whose Exec carries no timeout. */
  readonly defaultTimeoutMs: number;
  /** How long descendants may hold the output open after the main process exits. */
  readonly afterExitMs: number;
  readonly retentionMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface SignalInput {
  readonly commandId: string;
  readonly generation: Generation | undefined;
  readonly kind: SignalKind;
  readonly graceMs: number;
  readonly reason: string;
}

/**
 * The runner's application core: the table of commands and the six operations of the gRPC
 * service, in plain TypeScript (the gRPC edge only maps messages and errors).
 */
export class Runner {
  private readonly commands = new Map<string, Command>();
  private readonly processes = new Map<string, CommandProcess>();
  private readonly starting = new Map<string, Promise<Command>>();
  private closing = false;

  private constructor(private readonly opts: RunnerOptions) {}

  private get commandsRoot(): string {
    return join(this.opts.dataDir, 'commands');
  }

  /** Opens the data directory and loads what earlier boots left there. */
  static async open(opts: RunnerOptions): Promise<Runner> {
    const r = new Runner(opts);
    await mkdir(join(opts.dataDir, 'workspaces'), { recursive: true, mode: 0o700 });
    for (const c of await loadCommands(r.commandsRoot, opts.clock, opts.logger)) r.commands.set(c.id, c);
    opts.logger.info({ commands: r.commands.size }, 'spool loaded');
    return r;
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
    const meta = { v: 1 as const, commandId, taskId, conversationId, tenant, generation, command, cwd: input.cwd, startedAtMs: this.opts.clock.now().getTime(), pid: null, processIdentity: null, runnerBootId: this.opts.bootId, ackedOffset: 0 };
    const spool = CommandSpool.forCommand(this.commandsRoot, commandId);
    const cmd = new Command(meta, spool, { written: 0, records: 0, exit: null });
    // The writer exists before the process it serves; its events reach the process through this.
    const ref: { proc?: CommandProcess } = {};
    const writer = await spool.create(meta, {
      onWritten: (offset, records) => cmd.advance(offset, records),
      onPressure: (paused) => {
        this.opts.logger.debug({ commandId, paused }, 'spool backpressure');
        ref.proc?.setPaused(paused);
      },
      onFailed: (err) => {
        this.opts.logger.error({ err, commandId }, 'spool write failed: killing the command');
        ref.proc?.kill('spool_failed');
      },
    });
    this.commands.set(commandId, cmd);
    const { stopGraceMs, afterExitMs, clock, logger } = this.opts;
    const proc = (ref.proc = CommandProcess.spawn(cmd, writer, { cwd, env: commandEnv(workspace, input.env), timeoutMs: input.timeoutMs || this.opts.defaultTimeoutMs, stopGraceMs, afterExitMs, clock, logger }));
    this.processes.set(commandId, proc);
    void proc.done.then(() => this.processes.delete(commandId));
    await proc.recordIdentity();
    logger.info({ commandId, taskId, conversationId, generation, pid: meta.pid }, 'command started');
    return cmd;
  }

  /** Stops or kills a command, only if the request targets the generation it runs. */
  signal(req: SignalInput): { outcome: 'delivered' | 'already_exited'; view: CommandView } {
    const cmd = this.get(req.commandId);
    if (!req.generation) throw new ValidationError('generation is required', ['generation is required']);
    const g = cmd.meta.generation;
    if (!sameGeneration(g, req.generation)) {
      this.opts.logger.warn({ commandId: cmd.id, requested: req.generation, current: g, kind: req.kind, reason: req.reason }, 'stale signal dropped');
      throw new IllegalState(`stale generation (epoch ${req.generation.epoch}, attempt ${req.generation.attempt}): command ${cmd.id} runs (epoch ${g.epoch}, attempt ${g.attempt}); nothing was signalled`);
    }
    const proc = this.processes.get(cmd.id);
    if (cmd.exit || !proc || proc.finishing) return { outcome: 'already_exited', view: cmd.view() };
    this.opts.logger.info({ commandId: cmd.id, kind: req.kind, reason: req.reason }, 'signal delivered');
    if (req.kind === 'stop') proc.stop(req.graceMs || this.opts.stopGraceMs, 'stopped');
    else proc.kill('killed');
    return { outcome: 'delivered', view: cmd.view() };
  }

  /** Spooled output from an offset (see log-reader). */
  readLog(commandId: string, opts: ReadLogOptions): AsyncGenerator<LogItem, void, undefined> {
    return readLog(this.get(commandId), opts);
  }

  /** Records the committed cursor (monotonic); answers the cursor now in force. */
  async ack(commandId: string, offset: number): Promise<number> {
    const cmd = this.get(commandId);
    const available = cmd.exit?.endOffset ?? cmd.written;
    if (offset > available) throw new OffsetOutOfRange(offset, available, 'ack offset');
    if (offset > cmd.meta.ackedOffset) {
      cmd.meta.ackedOffset = offset;
      await cmd.spool.writeMeta(cmd.meta);
    }
    return cmd.meta.ackedOffset;
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
      freed.push(cmd.id);
    }
    if (freed.length > 0) this.opts.logger.info({ freed: freed.length }, 'spool freed');
    return freed;
  }

  /**
   * Ends every running command (SIGTERM, SIGKILL after `graceMs`) and waits for their exit
   * records: without re-adoption a command cannot outlive the runner that reads its output.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.starting.values()]);
    const procs = [...this.processes.values()];
    for (const p of procs) p.stop(graceMs, 'runner_shutdown');
    await Promise.all(procs.map((p) => p.done));
  }

  private get(commandId: string): Command {
    const cmd = this.commands.get(requireCommandId(commandId));
    if (!cmd) throw new NotFound(`no command ${JSON.stringify(commandId)} on this runner`);
    return cmd;
  }
}
