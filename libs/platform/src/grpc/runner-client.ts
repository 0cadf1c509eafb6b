import { readFileSync } from 'node:fs';
import { credentials, Metadata, type CallOptions, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { RunnerClient } from '@handplane/proto';

/** Keepalive makes a dead peer visible; without it a broken connection raises nothing. */
export const GRPC_KEEPALIVE = {
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.max_pings_without_data': 0,
  'grpc.max_receive_message_length': 8 * 1024 * 1024,
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

/** Caches one client per runner address. */
export class RunnerClients {
  private readonly clients = new Map<string, RunnerClient>();
  constructor(private readonly tls?: { ca: Buffer; cert: Buffer; key: Buffer }) {}

  get(address: string): RunnerClient {
    let c = this.clients.get(address);
    if (!c) {
      c = new RunnerClient(address, clientCredentials(address, this.tls), GRPC_KEEPALIVE);
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

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
