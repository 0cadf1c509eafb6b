import { Module } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { z } from 'zod';
import { Conflict } from '@handplane/kernel';
import { testNats, waitFor } from '@handplane/testing';
import { listeningPort, startHttpApp } from '../http/bootstrap';
import { createLogger } from '../logger';
import { runDurableConsumer } from '../nats/durable-consumer';
import { callRpc, serveRpc } from '../nats/rpc';
import { bindTelemetry, ServiceMetrics } from './metrics';

@Module({})
class EmptyModule {}

const logger = createLogger('metrics-test', 'silent');

/** One sample's value in a text exposition (labels given must match; others are ignored). */
function sample(body: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of body.split('\n')) {
    const m = /^([\w:]+)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

describe('service metrics over real NATS and HTTP', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  let metrics: ServiceMetrics;
  let open: INestApplication;
  let guarded: INestApplication;
  const get = async (app: INestApplication, path: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`http://127.0.0.1:${listeningPort(app)}${path}`, { headers });
    return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
  };
  beforeAll(async () => {
    env = await testNats('metrics');
    metrics = new ServiceMetrics('probe-service');
    bindTelemetry(env.nats, metrics);
    open = await startHttpApp(EmptyModule, 0, logger, '127.0.0.1', { metrics });
    guarded = await startHttpApp(EmptyModule, 0, logger, '127.0.0.1', { metrics: new ServiceMetrics('guarded', { defaultMetrics: false }), metricsAccess: { kind: 'token', token: 's3cret-token' } });
  });
  afterAll(async () => {
    await open?.close();
    await guarded?.close();
    await env?.close();
  });

  it('reports the queue depth of a durable consumer while its handler is busy, and the outcomes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const durable = env.topology.durable('depth');
    const consumer = await runDurableConsumer(env.nats, { stream: env.topology.streams.CONV, durable, filterSubject: env.topology.all.conv, logger, handler: () => gate });
    try {
      for (let i = 0; i < 5; i++) await env.nats.js.publish(env.topology.conv('c'), Buffer.from(`{"n":${i}}`));
      // One message is in the blocked handler: the server counts it ack-pending (with any prefetched), the rest pending.
      let body = '';
      await waitFor(
        async () => {
          body = (await get(open, '/metrics')).body;
          const pending = sample(body, 'handplane_consumer_pending_messages', { consumer: durable, state: 'pending' }) ?? -1;
          const unacked = sample(body, 'handplane_consumer_pending_messages', { consumer: durable, state: 'ack_pending' }) ?? -1;
          return unacked >= 1 && pending + unacked === 5;
        },
        20_000,
        'queue depth 5',
      );
      release();
      await waitFor(async () => sample((await get(open, '/metrics')).body, 'handplane_consumer_messages_total', { consumer: durable, outcome: 'ack' }) === 5, 20_000, '5 acks');
      body = (await get(open, '/metrics')).body;
      expect(sample(body, 'handplane_consumer_pending_messages', { consumer: durable, state: 'pending' })).toBe(0);
    } finally {
      release();
      await consumer.stop();
    }
  });

  it('counts RPCs on both sides by subject and outcome', async () => {
    const subject = `${env.prefix}.rpc.probe`;
    const sub = serveRpc(env.nats.nc, subject, 'probe', z.object({ fail: z.boolean() }), async (req) => {
      if (req.fail) throw new Conflict('no');
      return { ok: true };
    }, logger);
    try {
      const reply = z.object({ ok: z.boolean() }).passthrough();
      await callRpc(env.nats.nc, subject, { fail: false }, reply);
      await callRpc(env.nats.nc, subject, { fail: false }, reply);
      await callRpc(env.nats.nc, subject, { fail: true }, reply);
      await callRpc(env.nats.nc, subject, { nonsense: 1 }, reply);
      const body = (await get(open, '/metrics')).body;
      expect(sample(body, 'handplane_rpc_server_requests_total', { subject, outcome: 'ok' })).toBe(2);
      expect(sample(body, 'handplane_rpc_server_requests_total', { subject, outcome: 'conflict' })).toBe(1);
      expect(sample(body, 'handplane_rpc_server_requests_total', { subject, outcome: 'validation' })).toBe(1);
      expect(sample(body, 'handplane_rpc_client_requests_total', { subject, outcome: 'ok' })).toBe(2);
      expect(sample(body, 'handplane_rpc_duration_seconds_count', { subject, side: 'server' })).toBe(4);
    } finally {
      sub.unsubscribe();
    }
  });

  it('counts HTTP requests by route template, never the raw path', async () => {
    await get(open, '/healthz-nope/raw-path-id-7f3a');
    await get(open, '/metrics');
    const body = (await get(open, '/metrics')).body;
    expect(sample(body, 'handplane_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(sample(body, 'handplane_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
    // The raw path (and its id) appears in no label (sample values are numbers and may hold any digits).
    expect(body).not.toContain('raw-path-id-7f3a');
    expect(body).not.toContain('healthz-nope');
  });

  it('a token-guarded /metrics answers 401 without the bearer and the exposition with it', async () => {
    const none = await get(guarded, '/metrics');
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ error: { code: 'unauthorized' } });
    expect((await get(guarded, '/metrics', { authorization: 'Bearer s3cret-tokeX' })).status).toBe(401);
    const ok = await get(guarded, '/metrics', { authorization: 'Bearer s3cret-token' });
    expect(ok.status).toBe(200);
    expect(ok.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.body).toContain('handplane_http_requests_total');
  });
});
