import { DeliverPolicy } from '@nats-io/jetstream';
import { Pool } from 'pg';
import { decodeConversationEvent, decodeSandboxCommandEvent, decodeTaskEvent, topology } from '@handplane/contracts';
import { connectNats } from '@handplane/platform';
import { NATS_URL } from '@handplane/testing';
import { walkingSkeleton } from './walking-skeleton.suite';

/** Every message of `subject` (wildcards allowed) in `stream`, decoded, in order. */
async function readAll<E>(stream: string, subject: string, decode: (d: Uint8Array) => E): Promise<E[]> {
  const nats = await connectNats(NATS_URL, 'e2e-replicas-check');
  try {
    const info = await nats.jsm.streams.info(stream);
    if (info.state.messages === 0) return [];
    const consumer = await nats.js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
    const out: E[] = [];
    const iter = await consumer.consume({ max_messages: 512 });
    try {
      for await (const m of iter) {
        out.push(decode(m.data));
        if (m.info.pending === 0) break;
      }
    } finally {
      await iter.close().catch(() => undefined);
    }
    return out;
  } finally {
    await nats.nc.drain();
  }
}

const countBy = <T>(xs: readonly T[], key: (x: T) => string) => {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
};
const over1 = (m: Map<string, number>) => [...m].filter(([, n]) => n > 1);

/**
 * Issue 8 §5: the same e2e suite with two instances of every control-plane service (gateway,
 * agent-runtime, task-coordinator, log-ingestor) started together; requests alternate between the
 * two gateways. Afterwards the logs are checked for any effect that happened twice.
 */
walkingSkeleton('walking skeleton with two replicas of every control-plane service (e2e)', {
  replicas: 2,
  more: (ctx) => {
    it('shows no duplicate effect anywhere in the logs and the Command Log', async () => {
      const { stack } = ctx();
      for (const u of stack.baseUrls) expect((await fetch(`${u}/readyz`)).status).toBe(200);
      expect(stack.baseUrls).toHaveLength(2);
      const t = topology(stack.prefix);

      const every = (subject: (id: string) => string) => subject('x').replace(/x$/, '*');
      const tasks = await readAll(t.streams.TASKS, every(t.task), decodeTaskEvent);
      const cmds = await readAll(t.streams.TASKS, every(t.cmd), decodeSandboxCommandEvent);
      const conv = await readAll(t.streams.CONV, every(t.conv), decodeConversationEvent);
      const registered = tasks.filter((e) => e.type === 'TaskRegistered');
      expect(registered.length).toBeGreaterThanOrEqual(4); // the four commands of the suite

      const byTaskAttempt = (type: string) => countBy(tasks.filter((e) => e.type === type), (e) => `${e.data.taskId}:${(e.data as { attempt: number }).attempt}`);
      expect(over1(countBy(registered, (e) => e.data.taskId))).toEqual([]);
      expect(over1(byTaskAttempt('TaskStarted'))).toEqual([]);
      const finished = byTaskAttempt('TaskFinished');
      expect(over1(finished)).toEqual([]);
      expect(finished.size).toBe(registered.length);
      for (const type of ['CommandExited', 'CommandResultReadable', 'CommandResultDelivered']) {
        expect([type, over1(countBy(cmds.filter((e) => e.type === type), (e) => e.data.commandId))]).toEqual([type, []]);
      }
      // One completion per finished task attempt, one wake-up at most per task.
      const internal = conv.filter((e) => e.type === 'task.internal_event');
      expect(over1(countBy(internal, (e) => `${e.data.taskId}:${(e.data as { attempt: number }).attempt}`))).toEqual([]);
      expect(internal).toHaveLength(finished.size);
      const woken = conv.filter((e) => e.type === 'run.started' && e.data.trigger === 'task_event');
      expect(over1(countBy(woken, (e) => String((e.data as { taskId?: string }).taskId)))).toEqual([]);
      expect(over1(countBy(conv.filter((e) => e.type === 'task.finished'), (e) => e.data.taskId))).toEqual([]);

      // The Command Log of every command tiles [0, end) exactly: no byte twice, none missing.
      const pool = new Pool({ connectionString: stack.databaseUrl, max: 1 });
      try {
        const rows = await pool.query<{ command_id: string; offsets: string[]; lengths: number[]; end_offset: string | null }>(
          `SELECT l.command_id, array_agg(l."offset"::text ORDER BY l."offset") AS offsets, array_agg(octet_length(l.data) ORDER BY l."offset") AS lengths, c.end_offset::text
             FROM command_log l JOIN ingest_cursors c USING (command_id) GROUP BY l.command_id, c.end_offset`,
        );
        expect(rows.rows.length).toBeGreaterThanOrEqual(3);
        for (const r of rows.rows) {
          let pos = 0;
          r.offsets.forEach((o, i) => {
            expect([r.command_id, Number(o)]).toEqual([r.command_id, pos]);
            pos += r.lengths[i]!;
          });
          if (r.end_offset !== null) expect([r.command_id, pos]).toEqual([r.command_id, Number(r.end_offset)]);
        }
      } finally {
        await pool.end();
      }
    });
  },
});
