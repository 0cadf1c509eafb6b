import { Pool } from 'pg';
import { loadConfig, type Config } from '@handplane/contracts';
import { createLogger, EventStore } from '@handplane/platform';
import { freshDatabase, NATS_URL, testNats } from '@handplane/testing';
import { signDevToken } from '../src/app/dev-token';
import { startGateway, type GatewayOverrides, type RunningGateway } from '../src/service';

export const SECRET = 'gateway-test-secret';

/** A response read completely: status, headers, raw bytes and (when it parses) JSON. */
export interface Reply {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One gateway on port 0 against the real NATS (own prefix) and Postgres (own database). */
export interface Harness {
  readonly baseUrl: string;
  readonly gateway: RunningGateway;
  readonly nats: Awaited<ReturnType<typeof testNats>>;
  readonly store: EventStore;
  readonly pool: Pool;
  readonly config: Config;
  token(sub: string, tenant: string, ttlSeconds?: number): Promise<string>;
  /** Calls the API as `as` (a token, or [user, tenant]); a string body is sent as is. */
  call(method: string, path: string, as: string | [string, string] | null, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** Creates a conversation as [user, tenant] and returns its id. */
  conversation(as: [string, string], title?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startHarness(label: string, env: Record<string, string> = {}, overrides: GatewayOverrides = {}): Promise<Harness> {
  const nats = await testNats(label);
  const db = await freshDatabase(label);
  const config = loadConfig({ NATS_URL, NATS_PREFIX: nats.prefix, DATABASE_URL: db.url, GATEWAY_PORT: '0', JWT_SECRET: SECRET, LOG_LEVEL: 'silent', ...env });
  const gateway = await startGateway(config, { logger: createLogger('gateway-test', process.env.TEST_LOG_LEVEL ?? 'silent'), host: '127.0.0.1', ...overrides });
  const pool = new Pool({ connectionString: db.url, max: 3 });
  pool.on('error', () => undefined);
  const baseUrl = `http://127.0.0.1:${gateway.httpPort}`;
  const token = (sub: string, tenant: string, ttlSeconds = 600) => signDevToken({ sub, tenant }, SECRET, ttlSeconds);

  const call: Harness['call'] = async (method, path, as, body, headers = {}) => {
    const auth = as === null ? undefined : typeof as === 'string' ? as : await token(as[0], as[1]);
    const r = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const bytes = Buffer.from(await r.arrayBuffer());
    let json: unknown;
    try {
      json = bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, bytes, json };
  };

  return {
    baseUrl,
    gateway,
    nats,
    store: new EventStore(nats.nats),
    pool,
    config,
    token,
    call,
    async conversation(as, title = 'test') {
      const r = await call('POST', '/v1/conversations', as, { title });
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.bytes.toString()}`);
      return r.json.id as string;
    },
    async stop() {
      await gateway.stop();
      await pool.end();
      await nats.close();
      await db.drop();
    },
  };
}

/** Expects the JSON error shape with a status and code. */
export function expectError(r: Reply, status: number, code: string): void {
  expect({ status: r.status, code: r.json?.error?.code, message: typeof r.json?.error?.message }).toEqual({ status, code, message: 'string' });
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
}
