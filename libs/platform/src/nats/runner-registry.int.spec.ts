import { testNats, waitFor } from '@handplane/testing';
import { RunnerRegistry, type RunnerRecord } from './runner-registry';

const record = (runnerId: string, heartbeatAt: string): RunnerRecord => ({
  runnerId,
  address: `127.0.0.1:${runnerId.length + 5000}`,
  capacity: 10,
  running: 0,
  version: 'test',
  bootId: `boot-${runnerId}`,
  heartbeatAt,
});

describe('RunnerRegistry (real JetStream KV)', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  beforeAll(async () => {
    env = await testNats('reg');
  });
  afterAll(() => env.close());

  it('lists the registered runners, not the deregistered ones, and leaves no consumer on the bucket', async () => {
    const registry = await RunnerRegistry.open(env.nats, env.topology.runnersBucket);
    const now = new Date('2026-01-01T00:00:10.000Z');
    await registry.heartbeat(record('r-a', '2026-01-01T00:00:09.000Z'));
    await registry.heartbeat(record('r-b', '2026-01-01T00:00:00.000Z'));
    await registry.heartbeat(record('r-gone', '2026-01-01T00:00:09.000Z'));
    await registry.deregister('r-gone');
    for (let i = 0; i < 5; i++) expect((await registry.list()).map((r) => r.runnerId).sort()).toEqual(['r-a', 'r-b']);
    expect((await registry.live(now, 5_000)).map((r) => r.runnerId)).toEqual(['r-a']);
    // Dispatch lists runners for every task: a consumer per call (kv.keys) piled up by the thousand.
    const count = async () => (await env.nats.jsm.streams.info(`KV_${env.topology.runnersBucket}`)).state.consumer_count;
    await waitFor(async () => (await count()) === 0, 20_000, 'no consumer on the registry bucket');
  });

  it('lists nothing from an empty bucket', async () => {
    const other = await testNats('reg2');
    try {
      expect(await (await RunnerRegistry.open(other.nats, other.topology.runnersBucket)).list()).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
