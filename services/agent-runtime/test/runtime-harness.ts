import { Pool } from 'pg';
import { decodeConversationEvent, loadConfig } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import { createLogger, EventStore } from '@handplane/platform';
import { freshDatabase, testNats, waitFor } from '@handplane/testing';
import { scriptedModel } from '../src/app/model/scripted-model';
import type { ModelProvider, ModelResponse, TranscriptEntry } from '../src/app/model/transcript';
import { CONV_CONSUMER } from '../src/app/run/conv-consumer';
import { startRuntime, type RunningRuntime } from '../src/service';
import type { RuntimeConfig } from '../src/runtime-config';
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

/** Options of a harness: a model other than the scripted one, the runtime's own settings. */
export interface HarnessOptions {
  /** A model provider, or `config` for the one `MODEL_PROVIDER` names (default: the scripted model with test scripts). */
  readonly model?: ModelProvider | 'config';
  readonly runtimeConfig?: Partial<RuntimeConfig>;
  /** More shared configuration (e.g. `MODEL_PROVIDER`). */
  readonly env?: Record<string, string>;
}

/** Real NATS, a fresh database, the runtime and a fake coordinator. */
export async function startHarness(label: string, behaviour: (command: string) => Behaviour, scripts: Record<string, TestScript> = {}, opts: HarnessOptions = {}) {
  const env = await testNats(label);
  const db = await freshDatabase(label);
  const pool = new Pool({ connectionString: db.url });
  pool.on('error', () => undefined);
  const fake = new FakeCoordinator(env.nats, env.topology, pool, behaviour);
  fake.start();
  const config = loadConfig({ NATS_PREFIX: env.prefix, DATABASE_URL: db.url, RUNTIME_PORT: '0', FOREGROUND_WINDOW_MS: '2000', LOG_LEVEL: 'warn', ...opts.env });
  const model = opts.model === 'config' ? undefined : (opts.model ?? testModel(scripts));
  const start = () =>
    startRuntime(config, { ...(model ? { model } : {}), logger: createLogger('agent-runtime', 'warn'), leaseMs: 5000, sweepMs: 500, runtimeConfig: { APPROVAL_POLICY: '', ...opts.runtimeConfig } });
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
    /** Appends an event to the conversation as another service would (the gateway for answers and approvals). */
    async append(conversationId: string, event: ConversationEvent, msgId: string): Promise<number> {
      return (await store.publish(env.topology.conv(conversationId), event, msgId)).seq;
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
    /**
     * The fake has published everything, the runtime's consumer has handled it and no run is in
     * progress or could start (a completion held back by an open question or approval, G10, counts as settled).
     */
    async settled(): Promise<void> {
      await fake.idle();
      await waitFor(async () => {
        const info = await env.nats.jsm.consumers.info(env.topology.streams.CONV, env.topology.durable(CONV_CONSUMER));
        if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
        const busy = await pool.query(
          `SELECT 1 FROM run_leases UNION ALL SELECT 1 FROM inbox WHERE consumed_by_run IS NULL
           UNION ALL SELECT 1 FROM wakeups w WHERE consumed_by_run IS NULL AND NOT EXISTS (SELECT 1 FROM run_checkpoints k
             WHERE k.conversation_id = w.conversation_id AND jsonb_array_length(COALESCE(k.state->'conv'->'open', '[]'::jsonb)) > 0)
           UNION ALL SELECT 1 FROM run_checkpoints WHERE jsonb_typeof(state->'active') = 'object'`,
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
