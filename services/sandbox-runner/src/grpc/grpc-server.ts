import { readFile } from 'node:fs/promises';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { RunnerService, type RunnerServer } from '@handplane/proto';
import { isLoopback, type ServiceMetrics } from '@handplane/platform';
import { instrumentRunner } from './grpc-telemetry';

/** PEM files for mTLS: the server's certificate and key, and the CA that signs client certificates. */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
  readonly ca: string;
}

/** Server-side keepalive: a peer that vanished without a FIN is noticed and its streams end. */
const SERVER_OPTIONS = {
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  // An Exec may carry 64 KiB of command and 256 env values of up to 32 KiB.
  'grpc.max_receive_message_length': 10 * 1024 * 1024,
} as const;

/** "host:port", with brackets for IPv6 literals. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** mTLS when certificates are configured; plaintext only on loopback; otherwise refuse to start. */
export async function serverCredentials(host: string, tls: TlsFiles | null): Promise<ServerCredentials> {
  if (tls) {
    const [cert, key, ca] = await Promise.all([readFile(tls.cert), readFile(tls.key), readFile(tls.ca)]);
    return ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], true);
  }
  if (!isLoopback(hostPort(host, 0))) {
    throw new Error(`refusing plaintext gRPC on non-loopback RUNNER_HOST ${host}: set RUNNER_TLS_CERT, RUNNER_TLS_KEY and RUNNER_TLS_CA (mTLS)`);
  }
  return ServerCredentials.createInsecure();
}

/** Binds the server (port 0 picks a free one) and answers the bound port. */
export function bindServer(host: string, port: number, creds: ServerCredentials): Promise<{ server: Server; port: number }> {
  const server = new Server(SERVER_OPTIONS);
  return new Promise((resolve, reject) => {
    server.bindAsync(hostPort(host, port), creds, (err, bound) => (err ? reject(err) : resolve({ server, port: bound })));
  });
}

/** Adds the Runner service to a bound server; every call gets a span (caller's trace from metadata) and is timed. */
export function serveRunner(server: Server, impl: RunnerServer, metrics?: ServiceMetrics): void {
  server.addService(RunnerService, instrumentRunner(impl, metrics));
}

/** Graceful shutdown with a bound: open streams get `timeoutMs` to finish, then are cut. */
export function shutdownServer(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, timeoutMs);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
