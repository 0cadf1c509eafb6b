import type { handleUnaryCall, sendUnaryData, ServerUnaryCall, ServerWritableStream } from '@grpc/grpc-js';
import type { LogRecord, ReadLogRequest, RunnerServer } from '@handplane/proto';
import type { Logger } from '@handplane/platform';
import type { Runner } from '../app/runner';
import { ValidationError } from '@handplane/kernel';
import { toGrpcError } from './grpc-errors';
import { toCommandStatus, toLogRecord, toSignalKind, toSignalOutcome } from './runner.mapper';

/** Who answers: filled in once the server is bound (the runner id may derive from the port). */
export interface RunnerIdentity {
  runnerId: string;
  readonly bootId: string;
}

function unary<Req, Res>(method: string, logger: Logger, fn: (req: Req) => Promise<Res> | Res): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    Promise.resolve()
      .then(() => fn(call.request))
      .then(
        (res) => callback(null, res),
        (e: unknown) => callback(toGrpcError(e, logger, method)),
      );
  };
}

/** The Runner gRPC service: parse, call the application core, map the answer or the error. */
export function runnerGrpcService(runner: Runner, id: RunnerIdentity, logger: Logger): RunnerServer {
  return {
    exec: unary('Exec', logger, async (req) => {
      const r = await runner.exec(req);
      return { status: toCommandStatus(r.view, id.runnerId), created: r.created };
    }),
    signal: unary('Signal', logger, (req) => {
      const kind = toSignalKind(req.kind);
      const r = runner.signal({ commandId: req.commandId, taskId: req.taskId, generation: req.generation, kind, graceMs: req.graceMs, reason: req.reason });
      return { outcome: toSignalOutcome(r.outcome), status: toCommandStatus(r.view, id.runnerId) };
    }),
    writeStdin: unary('WriteStdin', logger, async (req) => {
      const r = await runner.writeStdin({ commandId: req.commandId, taskId: req.taskId, generation: req.generation, data: Buffer.from(req.data), close: req.close });
      return { written: r.written, closed: r.closed, totalWritten: r.totalWritten };
    }),
    probe: unary('Probe', logger, (req) => {
      const what = req.what;
      if (!what) throw new ValidationError('a probe needs a port or a path', ['what: port or path']);
      return runner.probe(req.commandId, what.$case === 'port' ? { port: what.value } : { path: what.value });
    }),
    readLog: (call) => void streamLog(runner, call, logger),
    ack: unary('Ack', logger, async (req) => ({ ackedOffset: await runner.ack(req.commandId, req.offset) })),
    status: unary('Status', logger, (req) => toCommandStatus(runner.status(req.commandId), id.runnerId)),
    list: unary('List', logger, (req) => ({
      runnerId: id.runnerId,
      bootId: id.bootId,
      commands: runner.list(req.conversationId).map((v) => toCommandStatus(v, id.runnerId)),
    })),
  };
}

/**
 * Streams the log with real flow control: when `write()` says the buffer is full, nothing more is
 * read from disk until 'drain'. A reader that cancels (or a server shutdown) aborts the loop, even
 * while it waits for new output.
 */
async function streamLog(runner: Runner, call: ServerWritableStream<ReadLogRequest, LogRecord>, logger: Logger): Promise<void> {
  const abort = new AbortController();
  const gone = () => abort.abort();
  call.once('cancelled', gone);
  call.once('close', gone);
  try {
    const { commandId, fromOffset, follow, maxChunkBytes } = call.request;
    for await (const item of runner.readLog(commandId, { fromOffset, follow, maxChunkBytes, signal: abort.signal })) {
      if (abort.signal.aborted) break;
      if (!call.write(toLogRecord(item))) await drained(call, abort.signal);
    }
    if (!abort.signal.aborted) call.end();
  } catch (e) {
    if (!abort.signal.aborted) call.emit('error', toGrpcError(e, logger, 'ReadLog'));
  } finally {
    call.off('cancelled', gone);
    call.off('close', gone);
  }
}

function drained(call: ServerWritableStream<ReadLogRequest, LogRecord>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
