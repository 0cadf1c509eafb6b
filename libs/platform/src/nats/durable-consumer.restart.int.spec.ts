import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from '@handplane/testing';
import { createLogger } from '../logger';
import { connectNats, type Nats } from './connect';
import { runDurableConsumer, type RunningConsumer } from './durable-consumer';

/**
 * A nats-server of this test's own (the machine's shared one is never restarted): the consumer must
 * resume soon after a server restart, also when its first check after the reconnect fails.
 */
describe('runDurableConsumer across a NATS server restart (own nats-server)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hp-dc-restart-'));
  let port: number;
  let monitor: number;
  let server: ChildProcess | undefined;
  let nats: Nats | undefined;
  let consumer: RunningConsumer | undefined;

  const start = async (jetstream: boolean) => {
    const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitor), ...(jetstream ? ['-js', '-sd', dir] : [])];
    server = spawn('nats-server', args, { stdio: 'ignore' });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${monitor}/healthz`).catch(() => null))?.status === 200, 20_000, 'nats-server to start', 100);
  };
  const kill = async () => {
    const s = server!;
    const gone = new Promise((r) => s.once('exit', r));
    s.kill('SIGKILL');
    await gone;
  };

  beforeAll(async () => {
    port = await freePort();
    monitor = await freePort();
    await start(true);
  });
  afterAll(async () => {
    await consumer?.stop();
    await nats?.nc.close();
    if (server && server.exitCode === null) await kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('handles messages published after the restart within seconds, not after a 15–45 s back-off', async () => {
    nats = await connectNats(`nats://127.0.0.1:${port}`, 'restart-test');
    await nats.jsm.streams.add({ name: 'RST', subjects: ['rst.*'] });
    const seen: string[] = [];
    consumer = await runDurableConsumer(nats, { stream: 'RST', durable: 'rst', handler: async (m) => void seen.push(m.string()), logger: createLogger('test', 'silent') });
    await nats.js.publish('rst.a', 'before');
    await waitFor(() => seen.includes('before'), 20_000, 'the first message');

    // Down, then up without JetStream for a moment: the client reconnects and the consumer's check fails.
    let reconnects = 0;
    void (async () => {
      for await (const st of nats!.nc.status()) if (st.type === 'reconnect') reconnects++;
    })();
    await kill();
    await start(false);
    await waitFor(() => reconnects > 0, 20_000, 'the client to reconnect', 100);
    await new Promise((r) => setTimeout(r, 3000));
    await kill();
    await start(true);
    await waitFor(async () => (await nats!.js.publish('rst.a', 'after').then(() => true).catch(() => false)), 20_000, 'a publish after the restart', 200);
    // The old 30 s expiry waited 15–45 s before checking again; 3 s waits 1.5–4.5 s.
    await waitFor(() => seen.includes('after'), 12_000, 'the message published after the restart');
    expect(seen).toEqual(['before', 'after']);
  });
});
