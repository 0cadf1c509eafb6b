import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { Server, ServerCredentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RunnerService, type ListResponse, type RunnerServer } from '@handplane/proto';
import { waitFor } from '@handplane/testing';
import { RunnerClients, unary } from './runner-client';

/**
 * A TCP proxy in front of a runner that can be cut off: `cut()` drops every connection and, until
 * `heal()`, accepts new ones but never forwards a byte (as a connect whose SYN went into a void, or
 * a peer that never answers the handshake). Held connections stay held after the heal, as the
 * half-open connects of a real outage do.
 */
class CuttableProxy {
  private readonly server: NetServer;
  private readonly live = new Set<Socket>();
  private readonly held = new Set<Socket>();
  private cutOff = false;
  port = 0;

  constructor(private readonly targetPort: number) {
    this.server = createServer((inbound) => {
      inbound.on('error', () => undefined);
      if (this.cutOff) {
        this.held.add(inbound);
        return;
      }
      const outbound = connect(this.targetPort, '127.0.0.1');
      outbound.on('error', () => inbound.destroy());
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      this.live.add(inbound);
      inbound.on('close', () => this.live.delete(inbound));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.live) s.destroy();
  }

  heal(): void {
    this.cutOff = false;
  }

  /** Connections accepted during the cut and never forwarded. */
  get heldCount(): number {
    return this.held.size;
  }

  async close(): Promise<void> {
    for (const s of [...this.live, ...this.held]) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const unimplemented = (_call: unknown, cb: (e: Partial<ServiceError>) => void) => cb({ code: GrpcStatus.UNIMPLEMENTED });

describe('RunnerClients after a runner was unreachable', () => {
  let server: Server;
  let proxy: CuttableProxy;
  let lists = 0;

  beforeAll(async () => {
    server = new Server();
    const impl: Partial<RunnerServer> = {
      list: (_call, cb) => {
        lists += 1;
        cb(null, { runnerId: 'proxied', bootId: 'boot-1', commands: [] } as ListResponse);
      },
      // One chunk, then the end of the stream.
      readLog: (call) => {
        call.write({ record: { $case: 'chunk', value: { offset: 0, stream: 1, data: Buffer.from(`log of ${call.request.commandId}`) } } } as never);
        call.end();
      },
    };
    for (const name of Object.keys(RunnerService) as (keyof RunnerServer)[]) if (!impl[name]) (impl as Record<string, unknown>)[name] = unimplemented;
    server.addService(RunnerService, impl as RunnerServer);
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    proxy = new CuttableProxy(port);
    await proxy.listen();
  });

  afterAll(async () => {
    await proxy.close();
    server.forceShutdown();
  });

  const list = (clients: RunnerClients, timeoutMs: number) => {
    const c = clients.get(`127.0.0.1:${proxy.port}`);
    return unary(c.list.bind(c), { conversationId: '' }, timeoutMs);
  };

  it('reaches the runner again after the cut heals, although the connect made during the cut never completes', async () => {
    const replaced: string[] = [];
    const clients = new RunnerClients(undefined, undefined, { connectTimeoutMs: 1500, onReplaced: (a) => replaced.push(a) });
    try {
      await expect(list(clients, 10_000)).resolves.toMatchObject({ runnerId: 'proxied' });
      proxy.cut();
      // Calls during the cut: the channel reconnects into the void and stays CONNECTING.
      await expect(list(clients, 500)).rejects.toMatchObject({ code: expect.any(Number) });
      await expect(list(clients, 500)).rejects.toMatchObject({ code: expect.any(Number) });
      proxy.heal();
      const before = lists;
      // Without a connect timeout the channel waits for its held connect forever: every call fails.
      await waitFor(async () => (await list(clients, 1000).catch(() => undefined))?.runnerId === 'proxied', 30_000, 'a List answered after the heal', 200);
      expect(lists).toBeGreaterThan(before);
      expect(clients.replaced).toBeGreaterThanOrEqual(1);
      expect(replaced[0]).toBe(`127.0.0.1:${proxy.port}`);
    } finally {
      clients.close();
    }
  }, 60_000);

  /** Cuts the runner off and calls until the channel's reconnect is one the proxy holds (a connect into the void). */
  const cutUntilHeld = async (clients: RunnerClients) => {
    proxy.cut();
    const held = proxy.heldCount;
    await waitFor(
      async () => {
        await list(clients, 300).catch(() => undefined);
        return proxy.heldCount > held || undefined;
      },
      10_000,
      'a connect held by the cut',
      50,
    );
  };

  /** A ReadLog follow stream (no deadline, as the ingestor's): its chunks' bytes, or its error. */
  const readLog = (clients: RunnerClients) =>
    new Promise<string>((resolve, reject) => {
      const call = clients.get(`127.0.0.1:${proxy.port}`).readLog({ commandId: 'c1', fromOffset: 0, follow: true, maxChunkBytes: 0 });
      let got = '';
      call.on('data', (r: { record?: { $case: string; value: { data?: Uint8Array } } }) => (got += r.record?.$case === 'chunk' ? Buffer.from(r.record.value.data ?? []).toString() : ''));
      call.on('error', reject);
      call.on('end', () => resolve(got));
    });

  it('fails a stream without a deadline that waits on a stalled channel, so its caller retries on a new one', async () => {
    const clients = new RunnerClients(undefined, undefined, { connectTimeoutMs: 1500 });
    try {
      await expect(readLog(clients)).resolves.toBe('log of c1');
      // The channel reconnects into the void: its connect is held and never completes.
      await cutUntilHeld(clients);
      const started = Date.now();
      const waiting = readLog(clients);
      proxy.heal();
      // Without the watchdog it would wait until the held connect gives up (never, with this proxy).
      await expect(waiting).rejects.toMatchObject({ code: GrpcStatus.UNAVAILABLE, details: expect.stringMatching(/not ready for \d+ ms \(replaced by a new connection\)/) });
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(clients.replaced).toBeGreaterThanOrEqual(1);
      // The retry goes through a new channel.
      await expect(readLog(clients)).resolves.toBe('log of c1');
    } finally {
      clients.close();
    }
  }, 60_000);

  it('replaces a stalled channel even when calls come only every few seconds (a caller backing off between retries)', async () => {
    const clients = new RunnerClients(undefined, undefined, { connectTimeoutMs: 1500 });
    try {
      await expect(list(clients, 10_000)).resolves.toMatchObject({ runnerId: 'proxied' });
      await cutUntilHeld(clients);
      proxy.heal();
      // Sparse retries, as the ingestor's backoff makes them: the stall must still be counted from
      // when it was first seen, or the channel that waits for its held connect is never replaced.
      let answered = false;
      for (let i = 0; i < 6 && !answered; i++) {
        answered = (await list(clients, 300).catch(() => undefined))?.runnerId === 'proxied';
        if (!answered) await new Promise((r) => setTimeout(r, 2500));
      }
      expect(answered).toBe(true);
      expect(clients.replaced).toBeGreaterThanOrEqual(1);
    } finally {
      clients.close();
    }
  }, 60_000);

  it('keeps a working channel: no replacement while calls succeed', async () => {
    // Short, but longer than a loaded machine's connect through the proxy (the watchdog fails calls waiting longer).
    const clients = new RunnerClients(undefined, undefined, { connectTimeoutMs: 1000 });
    try {
      const first = clients.get(`127.0.0.1:${proxy.port}`);
      for (let i = 0; i < 5; i++) {
        await list(clients, 10_000);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(clients.get(`127.0.0.1:${proxy.port}`)).toBe(first);
      expect(clients.replaced).toBe(0);
    } finally {
      clients.close();
    }
  }, 30_000);
});
