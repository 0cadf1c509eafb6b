import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setupTracing } from '@handplane/platform';

const root = join(__dirname, '..', '..');

/** OTLP/HTTP export configured only by the environment, received by a local stand-in collector. */
describe('OTLP exporter configured from the environment', () => {
  let server: Server;
  const received: { path: string; body: string }[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('refuses an unknown exporter name', () => {
    expect(() => setupTracing('svc', { OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/none, otlp or console/);
  });

  it('sends spans to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces named by OTEL_SERVICE_NAME', async () => {
    const { port } = server.address() as AddressInfo;
    const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`, OTEL_SERVICE_NAME: 'handplane-probe', OTEL_TRACES_EXPORTER: '' };
    await promisify(execFile)(process.execPath, ['-r', './scripts/ts-register.js', 'e2e/telemetry/otlp-child.ts'], { cwd: root, env, timeout: 60_000 });
    expect(received.map((r) => r.path)).toEqual(['/v1/traces']);
    expect(received[0]!.body).toContain('probe-span');
    expect(received[0]!.body).toContain('handplane-probe');
  });

  it('a service stopped by SIGTERM sends the spans of its last second and of its stop before it exits', async () => {
    const { port } = server.address() as AddressInfo;
    const before = received.length;
    const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_TRACES_EXPORTER: '', OTLP_CHILD: 'signal' };
    await promisify(execFile)(process.execPath, ['-r', './scripts/ts-register.js', 'e2e/telemetry/otlp-child.ts'], { cwd: root, env, timeout: 60_000 });
    const bodies = received.slice(before).map((r) => r.body).join('\n');
    expect(bodies).toContain('probe-span');
    expect(bodies).toContain('stop-span');
  });

  it('a collector that never answers does not hold the shutdown', async () => {
    const silent = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const { port } = silent.address() as AddressInfo;
      const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_TRACES_EXPORTER: '', OTLP_CHILD: 'signal', FLUSH_TIMEOUT_MS: '500' };
      // Exit code 0 (execFile rejects otherwise, and kills a child still running after 8 s: the
      // exporter's own timeout is 10 s, so a shutdown that waited for it would fail here).
      await promisify(execFile)(process.execPath, ['-r', './scripts/ts-register.js', 'e2e/telemetry/otlp-child.ts'], { cwd: root, env, timeout: 8_000 });
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('exports nothing when OTEL_TRACES_EXPORTER=none even with an endpoint', async () => {
    const { port } = server.address() as AddressInfo;
    const before = received.length;
    const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_TRACES_EXPORTER: 'none' };
    await promisify(execFile)(process.execPath, ['-r', './scripts/ts-register.js', 'e2e/telemetry/otlp-child.ts'], { cwd: root, env, timeout: 60_000 });
    expect(received.length).toBe(before);
  });
});
