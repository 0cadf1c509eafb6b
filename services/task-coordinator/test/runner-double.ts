import { Server, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import type { Topology } from '@handplane/contracts';
import type { Clock } from '@handplane/kernel';
import { RunnerRegistry, type Nats } from '@handplane/platform';
import { CommandState, CommandStatus, ExecResponse, ListResponse, RunnerService, SignalOutcome, SignalResponse, type ExecRequest, type ProbeRequest, type RunnerServer, type SignalRequest, type WriteStdinRequest } from '@handplane/proto';

const fail = (code: status, details: string): Partial<ServiceError> => ({ code, details, message: details });

/**
 * A remote peer for the coordinator's tests: a real gRPC runner on 127.0.0.1 that records every
 * Exec, runs nothing, and heart-beats into the real KV registry. Commands listed in `refuse` are
 * answered INVALID_ARGUMENT, as a runner answers a command it will never run.
 */
export class RunnerDouble {
  readonly execs: ExecRequest[] = [];
  readonly signals: SignalRequest[] = [];
  /** Every WriteStdin that reached the double (fenced ones included), and the bytes accepted per command. */
  readonly stdinWrites: WriteStdinRequest[] = [];
  readonly stdin = new Map<string, { bytes: Buffer; closed: boolean }>();
  readonly refuse = new Set<string>();
  /** Commands that ended (as the runner reports them in Status/List). */
  readonly exited = new Map<string, { exitCode?: number; signal: string; reason: string; endOffset: number }>();
  /** Generations the double pretends to run instead of the one it was given (a fence test). */
  readonly reportAs = new Map<string, { epoch: number; attempt: number }>();
  /** While set, Signal calls are recorded at once and answered only when this settles (a slow runner). */
  holdSignals: Promise<void> | null = null;
  private readonly started = new Map<string, ExecRequest>();
  /** Probe requests received, and the answers to give (`port:<n>` / `path:<p>` → answer). */
  readonly probes: ProbeRequest[] = [];
  readonly probeAnswers = new Map<string, { satisfied: boolean; detail: string }>();

  /** `127.0.0.1:<port>`, once listening. */
  address = '';

  private constructor(
    private readonly server: Server,
    private readonly registry: RunnerRegistry,
    private readonly clock: Clock,
    readonly runnerId: string,
  ) {}

  static async start(nats: Nats, t: Topology, clock: Clock, runnerId = 'runner-double'): Promise<RunnerDouble> {
    const server = new Server();
    const double = new RunnerDouble(server, await RunnerRegistry.open(nats, t.runnersBucket), clock, runnerId);
    const impl: RunnerServer = {
      exec: (call, cb) => double.exec(call.request, cb),
      status: (call, cb) => {
        const req = double.started.get(call.request.commandId);
        if (!req) return cb(fail(status.NOT_FOUND, 'unknown command'));
        cb(null, double.statusOf(req));
      },
      signal: (call, cb) => double.signal(call.request, cb),
      writeStdin: (call, cb) => {
        const req = call.request;
        double.stdinWrites.push(req);
        const known = double.started.get(req.commandId);
        if (!known) return cb(fail(status.NOT_FOUND, 'unknown command'));
        const g = double.reportAs.get(req.commandId) ?? known.generation;
        if (g?.epoch !== req.generation?.epoch || g?.attempt !== req.generation?.attempt) return cb(fail(status.FAILED_PRECONDITION, 'stale generation; nothing was written'));
        const s = double.stdin.get(req.commandId) ?? { bytes: Buffer.alloc(0), closed: false };
        if (s.closed && req.data.length > 0) return cb(fail(status.FAILED_PRECONDITION, 'stdin is closed: closed on request'));
        s.bytes = Buffer.concat([s.bytes, Buffer.from(req.data)]);
        s.closed ||= req.close;
        double.stdin.set(req.commandId, s);
        cb(null, { written: req.data.length, closed: s.closed, totalWritten: s.bytes.length });
      },
      // Condition waits' probes: answered from `probeAnswers` (not satisfied until a test says so).
      probe: (call, cb) => {
        const req = call.request;
        double.probes.push(req);
        if (!double.started.has(req.commandId)) return cb(fail(status.NOT_FOUND, 'unknown command'));
        if (req.what?.$case === 'path' && req.what.value.includes('..')) return cb(fail(status.INVALID_ARGUMENT, 'path leads out of the workspace'));
        const key = req.what?.$case === 'port' ? `port:${req.what.value}` : `path:${req.what?.value}`;
        cb(null, double.probeAnswers.get(key) ?? { satisfied: false, detail: `${key} not yet` });
      },
      readLog: (call) => call.destroy(fail(status.UNIMPLEMENTED, 'not in the double') as Error),
      ack: (_c, cb) => cb(fail(status.UNIMPLEMENTED, 'not in the double')),
      list: (_c, cb) => cb(null, ListResponse.fromPartial({ runnerId: double.runnerId, bootId: 'boot-1', commands: [...double.started.values()].map((r) => double.statusOf(r)) })),
    };
    server.addService(RunnerService, impl);
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    double.address = `127.0.0.1:${port}`;
    await double.heartbeat();
    return double;
  }

  /** Publishes (or refreshes) the runner's record at the clock's time. */
  async heartbeat(): Promise<void> {
    await this.registry.heartbeat({
      runnerId: this.runnerId,
      address: this.address,
      capacity: 16,
      running: this.started.size,
      version: 'double',
      bootId: 'boot-1',
      heartbeatAt: this.clock.now().toISOString(),
    });
  }

  /** Signal calls that addressed one command. */
  signalsOf(commandId: string): SignalRequest[] {
    return this.signals.filter((x) => x.commandId === commandId);
  }

  /** Takes an Exec as if a coordinator had sent it (one that died before recording the start). */
  execDirectly(req: ExecRequest): void {
    this.exec(req, () => undefined);
  }

  /** Forgets a command, as a runner that lost its spool would. */
  forget(commandId: string): void {
    this.started.delete(commandId);
  }

  /** Exec calls that addressed one command. */
  execsOf(commandId: string): ExecRequest[] {
    return this.execs.filter((e) => e.commandId === commandId);
  }

  /** The host goes dark: the gRPC server stops answering, the registry keeps its last record. */
  async crash(): Promise<void> {
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
  }

  async stop(): Promise<void> {
    await this.registry.deregister(this.runnerId).catch(() => undefined);
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
  }

  private exec(req: ExecRequest, cb: (e: Partial<ServiceError> | null, r?: ExecResponse) => void): void {
    this.execs.push(req);
    if (this.refuse.has(req.command)) return cb(fail(status.INVALID_ARGUMENT, `refusing ${req.command}`));
    const created = !this.started.has(req.commandId);
    if (created) this.started.set(req.commandId, req);
    cb(null, ExecResponse.fromPartial({ created, status: this.statusOf(this.started.get(req.commandId)!) }));
  }

  /** Fenced like the real runner: a stale generation is FAILED_PRECONDITION, an exited command `already_exited`. */
  private signal(req: SignalRequest, cb: (e: Partial<ServiceError> | null, r?: SignalResponse) => void): void {
    this.signals.push(req);
    const gate = this.holdSignals;
    if (gate) void gate.then(() => this.answerSignal(req, cb));
    else this.answerSignal(req, cb);
  }

  private answerSignal(req: SignalRequest, cb: (e: Partial<ServiceError> | null, r?: SignalResponse) => void): void {
    const known = this.started.get(req.commandId);
    if (!known) return cb(fail(status.NOT_FOUND, 'unknown command'));
    const g = this.reportAs.get(req.commandId) ?? known.generation;
    if (g?.epoch !== req.generation?.epoch || g?.attempt !== req.generation?.attempt) return cb(fail(status.FAILED_PRECONDITION, 'stale generation; nothing was signalled'));
    const outcome = this.exited.has(req.commandId) ? SignalOutcome.SIGNAL_OUTCOME_ALREADY_EXITED : SignalOutcome.SIGNAL_OUTCOME_DELIVERED;
    cb(null, SignalResponse.fromPartial({ outcome, status: this.statusOf(known) }));
  }

  statusOf(req: ExecRequest): CommandStatus {
    const exit = this.exited.get(req.commandId);
    return CommandStatus.fromPartial({
      commandId: req.commandId,
      taskId: req.taskId,
      conversationId: req.conversationId,
      generation: this.reportAs.get(req.commandId) ?? req.generation,
      state: exit ? CommandState.COMMAND_STATE_EXITED : CommandState.COMMAND_STATE_RUNNING,
      runnerId: this.runnerId,
      ...(exit ? { exit } : {}),
    });
  }
}
