import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { connectivityState as ConnectivityState, credentials, InterceptingCall, Metadata, status as GrpcStatus, type CallOptions, type ChannelCredentials, type Interceptor, type ServiceError } from '@grpc/grpc-js';
import { RunnerClient } from '@handplane/proto';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { traceMetadata } from '../telemetry/propagation';
import type { ServiceMetrics } from '../telemetry/metrics';
import { SERVICE_ATTR, tracerFor } from '../telemetry/tracing';

/** Keepalive makes a dead peer visible; without it a broken connection raises nothing. */
export const GRPC_KEEPALIVE = {
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.max_pings_without_data': 0,
  'grpc.max_receive_message_length': 8 * 1024 * 1024,
  // grpc-js backs reconnects off up to 120 s: after a 15 s network cut a runner stayed unreachable
  // for minutes after the heal (chaos suite). 5 s at most keeps a healed runner's recovery short.
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 5_000,
} as const;

/** Deadline for a unary call (every call has one: calls without a deadline can queue forever). */
export function deadline(ms = 10_000): Date {
  return new Date(Date.now() + ms);
}

/** True when the address is loopback, where plaintext is allowed. */
export function isLoopback(address: string): boolean {
  const host = address.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** Client channel credentials: mTLS when certificates are given, plaintext only on loopback. */
export function clientCredentials(address: string, tls?: { ca: Buffer; cert: Buffer; key: Buffer }): ChannelCredentials {
  if (tls) return credentials.createSsl(tls.ca, tls.key, tls.cert);
  if (!isLoopback(address)) throw new Error(`refusing plaintext gRPC to non-loopback runner ${address}: configure RUNNER_TLS_*`);
  return credentials.createInsecure();
}

/**
 * How long a runner's channel may go without being READY, while calls want it, before it is
 * replaced by a new one. grpc-js has no connect timeout: a TCP connect whose SYN went into a void
 * (a host cut off from the network, a connect that left through the default route with a source
 * address the runner cannot answer) keeps the channel CONNECTING until the kernel gives up
 * (`tcp_syn_retries` 6: about 127 s), and an HTTP/2 handshake that never answers keeps it there
 * forever. Every call meanwhile waits for a pick until its deadline, or fails at once in the
 * sticky TRANSIENT_FAILURE of pick_first, long after the runner is reachable again.
 */
export const RUNNER_CONNECT_TIMEOUT_MS = 10_000;

export interface RunnerClientsOptions {
  /** See RUNNER_CONNECT_TIMEOUT_MS. */
  readonly connectTimeoutMs?: number;
  /** Told when a stalled channel was replaced (for a log line). */
  readonly onReplaced?: (address: string, notReadyForMs: number) => void;
}

interface Cached {
  readonly client: RunnerClient;
  /** Monotonic time since which the channel was seen neither READY nor IDLE (null: it was, last time looked). */
  notReadySince: number | null;
  /** Calls made on this channel that have not ended yet (the watchdog fails them when it replaces the channel). */
  readonly calls: Set<InterceptingCall>;
}

/** How often the watchdog looks at channels that have calls waiting. */
const WATCHDOG_EVERY_MS = 1_000;

/**
 * Caches one client per runner address. Calls are traced, and timed in `metrics` when given.
 * A client whose channel stayed out of READY (connecting, or failing) for `connectTimeoutMs` is
 * closed and replaced, so a runner that is reachable again is reached by a new connection instead
 * of waiting for a connect attempt that can no longer succeed: at the next `get`, or by a watchdog
 * while calls wait on it. The watchdog matters for calls without a deadline (the ingestor's
 * `ReadLog` follow streams): queued on a channel whose connect hangs, they would wait until the
 * kernel gives the connect up (about 127 s after a 90 s network cut, chaos suite). It fails them
 * with UNAVAILABLE, and their callers retry on a new channel. A channel that is not READY carries
 * no call stream, so this cuts nothing that was moving.
 */
export class RunnerClients {
  private readonly clients = new Map<string, Cached>();
  private readonly interceptor: Interceptor;
  private readonly connectTimeoutMs: number;
  private watchdog: NodeJS.Timeout | undefined;
  /** Channels replaced because they stalled (for tests and metrics). */
  replaced = 0;
  constructor(
    private readonly tls?: { ca: Buffer; cert: Buffer; key: Buffer },
    metrics?: ServiceMetrics,
    private readonly options: RunnerClientsOptions = {},
  ) {
    this.interceptor = tracingInterceptor(metrics);
    this.connectTimeoutMs = options.connectTimeoutMs ?? RUNNER_CONNECT_TIMEOUT_MS;
  }

  get(address: string): RunnerClient {
    const cached = this.clients.get(address);
    if (cached && !this.stalled(address, cached)) return cached.client;
    const calls = new Set<InterceptingCall>();
    const client = new RunnerClient(address, clientCredentials(address, this.tls), { ...GRPC_KEEPALIVE, interceptors: [this.interceptor, trackCalls(calls)] });
    this.clients.set(address, { client, notReadySince: null, calls });
    this.watchdog ??= setInterval(() => this.watch(), Math.min(WATCHDOG_EVERY_MS, this.connectTimeoutMs)).unref();
    return client;
  }

  /** True (and the channel replaced: closed, its waiting calls failed) when it stalled; updates its clock. */
  private stalled(address: string, cached: Cached): boolean {
    const now = performance.now();
    const state = cached.client.getChannel().getConnectivityState(false);
    if (state === ConnectivityState.READY || state === ConnectivityState.IDLE) {
      cached.notReadySince = null;
      return false;
    }
    // Counted from the first time it was seen not ready, however long ago: a channel whose connect
    // hangs is never seen READY in between (restarting the clock after a quiet gap kept such a
    // channel alive through the retries of the full chaos run's 90 s cut).
    cached.notReadySince ??= now;
    const stalledMs = now - cached.notReadySince;
    if (state !== ConnectivityState.SHUTDOWN && stalledMs < this.connectTimeoutMs) return false;
    this.clients.delete(address);
    cached.client.close();
    for (const call of cached.calls) call.cancelWithStatus(GrpcStatus.UNAVAILABLE, `runner ${address} unreachable: its channel was not ready for ${Math.round(stalledMs)} ms (replaced by a new connection)`);
    cached.calls.clear();
    this.replaced += 1;
    this.options.onReplaced?.(address, Math.round(stalledMs));
    return true;
  }

  /** Replaces the stalled channels that have calls waiting (the others wait for their next `get`). */
  private watch(): void {
    for (const [address, cached] of [...this.clients]) if (cached.calls.size > 0) this.stalled(address, cached);
  }

  close(): void {
    clearInterval(this.watchdog);
    this.watchdog = undefined;
    for (const c of this.clients.values()) c.client.close();
    this.clients.clear();
  }
}

/** Keeps `calls` to the calls in flight on one channel. */
const trackCalls =
  (calls: Set<InterceptingCall>): Interceptor =>
  (options, nextCall) => {
    const call: InterceptingCall = new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            calls.delete(call);
            nextStatus(status);
          },
        });
      },
    });
    calls.add(call);
    return call;
  };

/** Turns a callback-style unary gRPC call into a promise with a deadline. Bind the method: `unary(c.exec.bind(c), req)`. */
export function unary<Req, Res>(
  call: (req: Req, md: Metadata, opts: Partial<CallOptions>, cb: (err: ServiceError | null, res: Res) => void) => unknown,
  req: Req,
  timeoutMs = 10_000,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    call(req, new Metadata(), { deadline: deadline(timeoutMs) }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/**
 * Every call to a runner (unary or stream) gets a CLIENT span, child of the caller's active span,
 * and carries it in the call metadata (`traceparent`), so the runner's server span joins the trace.
 * Interceptors run synchronously when the call is made, so `context.active()` is the caller's.
 */
const tracingInterceptor = (metrics?: ServiceMetrics): Interceptor => (options, nextCall) => {
  const method = options.method_definition.path.split('/').pop() ?? 'unknown';
  const parent = context.active();
  const service = metrics?.service ?? 'runner-client';
  const started = performance.now();
  const span = tracerFor(service).startSpan(`grpc Runner/${method}`, { kind: SpanKind.CLIENT, attributes: { [SERVICE_ATTR]: service, 'rpc.system': 'grpc', 'rpc.method': method } }, parent);
  return new InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      traceMetadata(trace.setSpan(parent, span), metadata);
      // A partial listener: grpc-js fills in the other callbacks and hands `nextStatus` on.
      next(metadata, {
        onReceiveStatus(status, nextStatus) {
          span.setAttribute('rpc.grpc.status_code', status.code);
          if (status.code !== GrpcStatus.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: GrpcStatus[status.code] });
          span.end();
          metrics?.runnerCalls.observe({ method, code: GrpcStatus[status.code] ?? String(status.code) }, (performance.now() - started) / 1000);
          nextStatus(status);
        },
      });
    },
  });
};

/**
 * Client-side mTLS material for calling runners, from `RUNNER_TLS_CERT`, `RUNNER_TLS_KEY` and
 * `RUNNER_TLS_CA` (file paths; all three or none). None means plaintext, which `clientCredentials`
 * allows only for loopback runners.
 */
export function loadRunnerClientTls(env: Record<string, string | undefined> = process.env): { ca: Buffer; cert: Buffer; key: Buffer } | undefined {
  const paths = { cert: env.RUNNER_TLS_CERT, key: env.RUNNER_TLS_KEY, ca: env.RUNNER_TLS_CA };
  const given = Object.values(paths).filter((p) => p && p.length > 0).length;
  if (given === 0) return undefined;
  if (given !== 3) throw new Error('RUNNER_TLS_CERT, RUNNER_TLS_KEY and RUNNER_TLS_CA must be set together');
  return { cert: readFileSync(paths.cert!), key: readFileSync(paths.key!), ca: readFileSync(paths.ca!) };
}
