import { EventEmitter } from 'node:events';
import { Server, ServerCredentials, status, type ServerWritableStream, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { OutputStream, RunnerService, type ExitRecord, type LogRecord, type ReadLogRequest, type RunnerServer } from '@handplane/proto';
import type { Nats } from '@handplane/platform';
import { RunnerRegistry } from '@handplane/platform';
import type { GeneratedOutput } from './generated-output';

/** One command's spool in the double: bytes written so far (with their stream) and, at the end, an exit. */
export class ScriptedCommand {
  private readonly segments: { offset: number; stream: 1 | 2; data: Buffer }[] = [];
  private generated: GeneratedOutput | null = null;
  private size = 0;
  exitRecord: ExitRecord | null = null;
  readonly changed = new EventEmitter();

  get length(): number {
    return this.size;
  }

  /** Serves `gen` as this command's output, of which `available` bytes exist now (all by default). */
  generate(gen: GeneratedOutput, available = gen.total): void {
    if (this.size > 0 || this.exitRecord) throw new Error('generate() only on a fresh command');
    this.generated = gen;
    this.size = Math.min(gen.total, available);
    this.changed.emit('change');
  }

  /** `n` more bytes of the generated output exist (as the command printing them). */
  grow(n: number): void {
    if (!this.generated || this.exitRecord) throw new Error('grow() needs a generated, running command');
    this.size = Math.min(this.generated.total, this.size + n);
    this.changed.emit('change');
  }

  /** Appends output (as the command printing it). */
  write(data: Buffer, stream: 1 | 2 = 1): void {
    if (this.exitRecord) throw new Error('command already exited');
    if (this.generated) throw new Error('write() on a generated command');
    this.segments.push({ offset: this.size, stream, data });
    this.size += data.length;
    this.changed.emit('change');
  }

  /** Ends the command: the exit record (end offset = everything written). */
  exit(e: { exitCode?: number; signal?: string; reason?: string } = { exitCode: 0 }): void {
    this.exitRecord = { exitCode: e.exitCode, signal: e.signal ?? '', endOffset: this.size, startedAtMs: Date.parse('2026-01-01T00:00:00Z'), finishedAtMs: Date.parse('2026-01-01T00:01:00Z'), reason: e.reason ?? '' };
    this.changed.emit('change');
  }

  /** Up to `max` bytes from `pos`, never across a change of stream. */
  slice(pos: number, max: number): { stream: 1 | 2; data: Buffer } | null {
    if (this.generated) {
      if (pos >= this.size) return null;
      // The stream switches every region: four of stdout, then one of stderr.
      const region = this.generated.regionBytes;
      const regionEnd = (Math.floor(pos / region) + 1) * region;
      const stream = Math.floor(pos / region) % 5 === 4 ? 2 : 1;
      return { stream, data: this.generated.bytes(pos, Math.min(max, this.size - pos, regionEnd - pos)) };
    }
    const seg = this.segments.find((s) => s.offset <= pos && pos < s.offset + s.data.length);
    if (!seg) return null;
    const from = pos - seg.offset;
    return { stream: seg.stream, data: seg.data.subarray(from, Math.min(seg.data.length, from + max)) };
  }
}

export interface DoubleOptions {
  /** Bytes per chunk the double sends (the real runner caps at 64 KiB). */
  chunkBytes?: number;
  /** When a read starts above 0, re-send this many bytes before `fromOffset` (as a runner replaying its last chunk). */
  replayOverlap?: number;
  /** Runs before an Ack is answered (the test checks what is durable at that moment). */
  onAck?: (commandId: string, offset: number) => Promise<void>;
}

/**
 * A gRPC runner double for the ingestor's tests: serves ReadLog from buffers the test controls,
 * records every ReadLog call and Ack, and registers itself in the test's registry bucket.
 */
export class RunnerDouble {
  readonly commands = new Map<string, ScriptedCommand>();
  /** Every ReadLog: the offset asked for and the offset the double really started sending from. */
  readonly readLogCalls = new Map<string, { fromOffset: number; sentFrom: number }[]>();
  readonly maxConcurrentReads = new Map<string, number>();
  readonly acks: { commandId: string; offset: number }[] = [];
  private readonly reading = new Map<string, number>();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private readonly server = new Server();
  address = '';

  private constructor(
    readonly runnerId: string,
    private readonly registry: RunnerRegistry,
    readonly options: DoubleOptions,
  ) {}

  static async start(nats: Nats, bucket: string, runnerId: string, options: DoubleOptions = {}): Promise<RunnerDouble> {
    const d = new RunnerDouble(runnerId, await RunnerRegistry.open(nats, bucket), options);
    d.server.addService(RunnerService, d.implementation());
    const port = await new Promise<number>((resolve, reject) => d.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    d.address = `127.0.0.1:${port}`;
    await d.heartbeat();
    return d;
  }

  /** The command's spool (created empty on first use). */
  command(commandId: string): ScriptedCommand {
    let c = this.commands.get(commandId);
    if (!c) {
      c = new ScriptedCommand();
      this.commands.set(commandId, c);
    }
    return c;
  }

  async heartbeat(at = new Date()): Promise<void> {
    await this.registry.heartbeat({ runnerId: this.runnerId, address: this.address, capacity: 8, running: this.commands.size, version: 'double', bootId: 'b1', heartbeatAt: at.toISOString() });
  }

  /** Heart-beats every `ms` until `kill` or `stop`. */
  keepAlive(ms: number): void {
    this.heartbeatTimer = setInterval(() => void this.heartbeat().catch(() => undefined), ms);
  }

  /** The host dies: no more heartbeats, every connection dropped. */
  kill(): void {
    clearInterval(this.heartbeatTimer);
    this.server.forceShutdown();
  }

  async deregister(): Promise<void> {
    await this.registry.deregister(this.runnerId);
  }

  async stop(): Promise<void> {
    this.kill();
  }

  private implementation(): RunnerServer {
    const unimplemented = (_call: ServerUnaryCall<unknown, unknown>, cb: sendUnaryData<never>) => cb({ code: status.UNIMPLEMENTED, details: 'double' }, null);
    return {
      exec: unimplemented,
      signal: unimplemented,
      status: unimplemented,
      list: unimplemented,
      writeStdin: unimplemented,
      probe: unimplemented,
      readLog: (call) => void this.readLog(call),
      ack: (call, cb) => {
        const { commandId, offset } = call.request;
        this.acks.push({ commandId, offset });
        void (this.options.onAck?.(commandId, offset) ?? Promise.resolve()).then(() => cb(null, { ackedOffset: offset }));
      },
    };
  }

  /** Waits for the client to take more (or for a cancel/change to wake the loop). */
  private drained(call: ServerWritableStream<ReadLogRequest, LogRecord>, setWake: (r: () => void) => void): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        call.off('drain', done);
        resolve();
      };
      call.once('drain', done);
      setWake(done);
    });
  }

  private async readLog(call: ServerWritableStream<ReadLogRequest, LogRecord>): Promise<void> {
    const { commandId, fromOffset } = call.request;
    const sentFrom = fromOffset > 0 && this.options.replayOverlap ? Math.max(0, fromOffset - this.options.replayOverlap) : fromOffset;
    const calls = this.readLogCalls.get(commandId) ?? [];
    calls.push({ fromOffset, sentFrom });
    this.readLogCalls.set(commandId, calls);
    const cmd = this.commands.get(commandId);
    if (!cmd) {
      call.emit('error', { code: status.NOT_FOUND, details: `unknown command ${commandId}` });
      return;
    }
    const now = (this.reading.get(commandId) ?? 0) + 1;
    this.reading.set(commandId, now);
    this.maxConcurrentReads.set(commandId, Math.max(now, this.maxConcurrentReads.get(commandId) ?? 0));
    let cancelled = false;
    const onChange = () => wake?.();
    let wake: (() => void) | undefined;
    call.on('cancelled', () => {
      cancelled = true;
      wake?.();
    });
    cmd.changed.on('change', onChange);
    try {
      let pos = sentFrom;
      while (!cancelled) {
        const piece = cmd.slice(pos, this.options.chunkBytes ?? 64 * 1024);
        if (piece) {
          const stream = piece.stream === 2 ? OutputStream.OUTPUT_STREAM_STDERR : OutputStream.OUTPUT_STREAM_STDOUT;
          const ok = call.write({ record: { $case: 'chunk', value: { offset: pos, stream, data: piece.data } } });
          pos += piece.data.length;
          if (!ok) await this.drained(call, (r) => (wake = r));
        } else if (cmd.exitRecord && pos >= cmd.length) {
          call.write({ record: { $case: 'exit', value: cmd.exitRecord } });
          call.end();
          return;
        } else {
          await new Promise<void>((r) => (wake = r));
        }
        wake = undefined;
      }
    } finally {
      cmd.changed.off('change', onChange);
      this.reading.set(commandId, (this.reading.get(commandId) ?? 1) - 1);
    }
  }
}
