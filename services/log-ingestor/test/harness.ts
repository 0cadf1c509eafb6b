import { createHash, randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { decodeConversationEvent, decodeSandboxCommandEvent, loadConfig, type Config } from '@handplane/contracts';
import type { CommandOutput, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { createLogger, createPool, EventStore } from '@handplane/platform';
import { freshDatabase, NATS_URL, testNats } from '@handplane/testing';

export const quietLogger = () => createLogger('log-ingestor-test', process.env.TEST_LOG_LEVEL ?? 'silent');

/** NATS with its own prefix, a fresh database, and helpers to feed and inspect the ingestor. */
export async function ingestorEnv(label: string) {
  const env = await testNats(label);
  const db = await freshDatabase(label);
  const pool: Pool = createPool(db.url, 4);
  const store = new EventStore(env.nats);
  const t = env.topology;

  const config = (over: Record<string, string> = {}): Config =>
    loadConfig({ NATS_URL, NATS_PREFIX: env.prefix, DATABASE_URL: db.url, INGESTOR_PORT: '0', LOG_LEVEL: 'silent', ...over });

  /** What the coordinator appends for a started command: TaskRegistered, then TaskStarted. */
  async function startTask(a: { taskId: string; commandId: string; conversationId: string; runnerId: string; windowMs?: number; startedAt?: Date }) {
    const at = (a.startedAt ?? new Date()).toISOString();
    const registered: TaskEvent = {
      type: 'TaskRegistered',
      data: {
        taskId: a.taskId,
        commandId: a.commandId,
        conversationId: a.conversationId,
        tenant: 'acme',
        userId: 'u1',
        origin: 'user',
        command: 'cat big',
        cwd: '',
        env: {},
        epoch: 1,
        attempt: 1,
        foregroundWindowMs: a.windowMs ?? 60_000,
        timeoutMs: 3_600_000,
        registeredAt: at,
      },
      metadata: { at, actor: 'u1' },
    };
    const started: TaskEvent = { type: 'TaskStarted', data: { taskId: a.taskId, commandId: a.commandId, attempt: 1, runnerId: a.runnerId, startedAt: at }, metadata: { at } };
    const s1 = await store.append(t.task(a.taskId), [registered], { expectedLastSeq: 0, msgId: `${a.taskId}:registered` });
    await store.append(t.task(a.taskId), [started], { expectedLastSeq: s1, msgId: `${a.taskId}:1:started` });
  }

  async function rows(commandId: string): Promise<{ offset: number; stream: number; data: Buffer }[]> {
    const r = await pool.query<{ offset: string; stream: number; data: Buffer }>('SELECT "offset", stream, data FROM command_log WHERE command_id = $1 ORDER BY "offset"', [commandId]);
    return r.rows.map((x) => ({ offset: Number(x.offset), stream: x.stream, data: x.data }));
  }

  async function cursor(commandId: string) {
    type Row = {
      result_state: string;
      committed_offset: string;
      end_offset: string | null;
      exit_code: number | null;
      signal: string | null;
      owner: string | null;
      last_error: string | null;
      logs_seq: string | null;
      dropped_from: string | null;
      dropped_to: string | null;
      drop_final: boolean;
    };
    const r = await pool.query<Row>(
      `SELECT result_state, committed_offset, end_offset, exit_code, signal, owner, last_error, logs_seq, dropped_from, dropped_to, drop_final
       FROM ingest_cursors WHERE command_id = $1`,
      [commandId],
    );
    const c = r.rows[0];
    const num = (v: string | null) => (v === null ? null : Number(v));
    return c
      ? { ...c, committed_offset: Number(c.committed_offset), end_offset: num(c.end_offset), logs_seq: num(c.logs_seq), dropped_from: num(c.dropped_from), dropped_to: num(c.dropped_to) }
      : undefined;
  }

  async function cmdEvents(commandId: string): Promise<SandboxCommandEvent[]> {
    const r = await store.read(t.streams.TASKS, t.cmd(commandId), decodeSandboxCommandEvent);
    return r.events.map((e) => e.event);
  }

  async function outputEvents(conversationId: string): Promise<CommandOutput['data'][]> {
    const r = await store.read(t.streams.CONV, t.conv(conversationId), decodeConversationEvent);
    return r.events.flatMap((e) => (e.event.type === 'command.output' ? [e.event.data] : []));
  }

  /** Chunk messages and the exit record of `log.<commandId>` in LOGS. */
  async function logsMessages(commandId: string) {
    const out: { offset: number; stream: string; bytes: number; exit: string | null; msgId: string }[] = [];
    const info = await env.nats.jsm.streams.info(t.streams.LOGS);
    for (let seq = info.state.first_seq; seq > 0 && seq <= info.state.last_seq; seq++) {
      const m = await env.nats.jsm.streams.getMessage(t.streams.LOGS, { seq }).catch(() => null);
      if (!m || m.subject !== t.log(commandId)) continue;
      out.push({ offset: Number(m.header.get('Hp-Offset')), stream: m.header.get('Hp-Stream'), bytes: m.data.length, exit: m.header.get('Hp-Exit') || null, msgId: m.header.get('Nats-Msg-Id') });
    }
    return out;
  }

  return {
    env,
    db,
    pool,
    store,
    t,
    config,
    startTask,
    rows,
    cursor,
    cmdEvents,
    outputEvents,
    logsMessages,
    async close() {
      await pool.end();
      await env.close();
      await db.drop();
    },
  };
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
export const uid = (p: string) => `${p}${randomBytes(4).toString('hex')}`;

/** Bytes no text decoder would keep: NULs, invalid UTF-8, lone continuation bytes, plus random noise. */
export function hostileBytes(n: number): Buffer {
  const b = randomBytes(n);
  const nasty = [Buffer.from([0, 0, 0]), Buffer.from([0xff, 0xfe]), Buffer.from([0xc3]), Buffer.from([0x80, 0x80]), Buffer.from('€ü\n', 'utf8'), Buffer.from([0xed, 0xa0, 0x80])];
  for (let at = 0, i = 0; at < n - 4; at += 997, i++) nasty[i % nasty.length]!.copy(b, at);
  return b;
}

/** Writes `data` into the double's spool in uneven pieces, switching streams now and then, over time. */
export async function dribble(write: (d: Buffer, stream: 1 | 2) => void, data: Buffer, o: { maxPiece?: number; delayMs?: number } = {}): Promise<void> {
  let at = 0;
  let i = 0;
  while (at < data.length) {
    const size = Math.min(data.length - at, 1 + ((i * 7919) % (o.maxPiece ?? 40_000)));
    write(data.subarray(at, at + size), i % 5 === 4 ? 2 : 1);
    at += size;
    i++;
    if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs));
  }
}
