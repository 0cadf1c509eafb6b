import { Pool } from 'pg';
import { decodeConversationEvent, loadConfig } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import { createLogger, EventStore } from '@handplane/platform';
import { freshDatabase, testNats, waitFor } from '@handplane/testing';
import { scriptedModel } from '../src/app/model/scripted-model';
import type { ModelProvider, ModelResponse, TranscriptEntry } from '../src/app/model/transcript';
import { CONV_CONSUMER } from '../src/app/run/conv-consumer';
import { startRuntime, type RunningRuntime } from '../src/service';
import { FakeCoordinator, type Behaviour } from './fake-coordinator';

/** A scripted turn for tests: a function of the transcript since the last user message. */
export type TestScript = ((since: readonly TranscriptEntry[]) => ModelResponse)[];

/**
 * The scripted model, except for messages whose text names a test script (`test:<name>`): those
 * play the script's responses in order, so a test can make the model misbehave on purpose.
 */
export function testModel(scripts: Record<string, TestScript>): ModelProvider {
  return {
    async next(transcript) {
      let i = transcript.length - 1;
      while (i >= 0 && transcript[i]!.kind !== 'user') i--;
      const user = transcript[i];
      const script = user?.kind === 'user' && user.text.startsWith('test:') ? scripts[user.text.slice(5)] : undefined;
      if (!script) return scriptedModel(transcript);
      const since = transcript.slice(i + 1);
      const n = since.filter((e) => e.kind === 'assistant').length;
      return n < script.length ? script[n]!(since) : { toolCalls: [] };
    },
  };
}

/** Real NATS, a fresh database, the runtime and a fake coordinator. */
export async function startHarness(label: string, behaviour: (command: string) => Behaviour, scripts: Record<string, TestScript> = {}) {
  const env = await testNats(label);
  const db = await freshDatabase(label);
  const pool = new Pool({ connectionString: db.url });
  pool.on('error', () => undefined);
  const fake = new FakeCoordinator(env.nats, env.topology, pool, behaviour);
  fake.start();
  const config = loadConfig({ NATS_PREFIX: env.prefix, DATABASE_URL: db.url, RUNTIME_PORT: '0', FOREGROUND_WINDOW_MS: '2000', LOG_LEVEL: 'warn' });
  const start = () => startRuntime(config, { model: testModel(scripts), logger: createLogger('agent-runtime', 'warn'), leaseMs: 5000, sweepMs: 500 });
  let runtime: RunningRuntime = await start();
  const store = new EventStore(env.nats);

  let n = 0;
  const h = {
    env,
    pool,
    fake,
    httpPort: () => runtime.httpPort,
    /** Stops this runtime instance (interrupting its runs) and starts another one on the same NATS and database. */
    async restartRuntime(beforeStart: () => Promise<void> = async () => undefined): Promise<void> {
      await runtime.stop();
      await beforeStart();
      runtime = await start();
    },
    async conversation(id: string, tenant = 'acme'): Promise<string> {
      await pool.query(`INSERT INTO conversations (id, tenant, created_by, created_at) VALUES ($1, $2, 'alice', now())`, [id, tenant]);
      return id;
    },
    async say(conversationId: string, userId: string, text: string): Promise<string> {
      const messageId = `m${++n}`;
      await store.publish(env.topology.conv(conversationId), { type: 'message.user', data: { messageId, userId, text }, metadata: { at: new Date().toISOString(), actor: userId } }, `msg:${messageId}`);
      return messageId;
    },
    async events(conversationId: string): Promise<(ConversationEvent & { seq: number })[]> {
      const r = await store.read(env.topology.streams.CONV, env.topology.conv(conversationId), decodeConversationEvent);
      return r.events.map((e) => ({ ...e.event, seq: e.seq }));
    },
    async waitForEvents(conversationId: string, probe: (es: ConversationEvent[]) => boolean, what: string, timeoutMs = 20_000) {
      return waitFor(async () => {
        const es = await h.events(conversationId);
        return probe(es) ? es : undefined;
      }, timeoutMs, what, 100);
    },
    /** The fake has published everything, the runtime's consumer has handled it and no run is in progress. */
    async settled(): Promise<void> {
      await fake.idle();
      await waitFor(async () => {
        const info = await env.nats.jsm.consumers.info(env.topology.streams.CONV, env.topology.durable(CONV_CONSUMER));
        if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
        const busy = await pool.query(
          `SELECT 1 FROM run_leases UNION ALL SELECT 1 FROM inbox WHERE consumed_by_run IS NULL
           UNION ALL SELECT 1 FROM wakeups WHERE consumed_by_run IS NULL UNION ALL SELECT 1 FROM run_checkpoints WHERE jsonb_typeof(state->'active') = 'object'`,
        );
        return busy.rowCount === 0;
      }, 20_000, 'the runtime to settle', 100);
    },
    async stop() {
      await runtime.stop();
      await fake.stop();
      await pool.end();
      await env.close();
      await db.drop();
    },
  };
  return h;
}

export type Harness = Awaited<ReturnType<typeof startHarness>>;

/** Events of one type, typed. */
export function ofType<E extends ConversationEvent, T extends E['type']>(es: readonly E[], type: T): Extract<E, { type: T }>[] {
  return es.filter((e): e is Extract<E, { type: T }> => e.type === type);
}
