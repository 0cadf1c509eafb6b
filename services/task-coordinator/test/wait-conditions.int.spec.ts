import type { StartTaskReply } from '@handplane/contracts';
import { validateTaskWaitReplySchema, type ValidateTaskWaitReply } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import type { FixedClock } from '@handplane/kernel';
import { callRpc } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const conditionEvents = (events: ConversationEvent[]) => events.filter((e): e is Extract<ConversationEvent, { type: 'task.condition_met' }> => e.type === 'task.condition_met');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Condition waits (issue 10.1), control-plane side: validate-task-wait checks and registers them, the
 * watcher reads the durable Command Log (rows written here as the log-ingestor writes them) and wakes
 * the conversation exactly once. No runner: the tasks stay registered and unfinished.
 */
describe('condition waits (real NATS and Postgres)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness('conditions', {}, { conditionSweepMs: 100 });
  });
  afterAll(() => h?.close());

  const validate = (body: object): Promise<ValidateTaskWaitReply> => callRpc(h.nats.nc, h.t.rpc.validateTaskWait, body, validateTaskWaitReplySchema);
  const registered = async (requestId: string, conversationId: string) => {
    const r = ok(await h.startTask(startBody({ requestId, conversationId, command: 'npm run dev' })));
    await waitFor(async () => (await h.pool.query('SELECT 1 FROM tasks WHERE task_id = $1', [r.taskId])).rows[0], 15_000, 'projected');
    return r;
  };
  let chunkOffset = new Map<string, number>();
  const output = async (commandId: string, text: string) => {
    const at = chunkOffset.get(commandId) ?? 0;
    await h.pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ($1, $2, 1, $3)`, [commandId, at, Buffer.from(text)]);
    chunkOffset.set(commandId, at + Buffer.byteLength(text));
  };
  beforeEach(() => {
    chunkOffset = new Map();
  });

  it('wakes the conversation once with the matching line; the task keeps running', async () => {
    const r = await registered('cw-1', 'conv-cw1');
    const reply = await validate({ conversationId: 'conv-cw1', taskIds: [r.taskId], runId: 'run-1', conditions: [{ taskId: r.taskId, until: { outputMatches: '^ready on port (\\d+)$' } }] });
    expect(reply).toMatchObject({ ok: true, valid: true });
    // Declared again by the same run: still one condition.
    expect(await validate({ conversationId: 'conv-cw1', taskIds: [r.taskId], runId: 'run-1', conditions: [{ taskId: r.taskId, until: { outputMatches: '^ready on port (\\d+)$' } }] })).toMatchObject({ valid: true });

    await output(r.commandId, 'compiling\nready on po');
    await sleep(400);
    expect(conditionEvents(await h.convEvents('conv-cw1'))).toHaveLength(0);
    await output(r.commandId, 'rt 5173\nwatching\n');
    const met = await waitFor(async () => conditionEvents(await h.convEvents('conv-cw1'))[0], 15_000, 'condition met');
    expect(met.data).toMatchObject({ taskId: r.taskId, commandId: r.commandId, attempt: 1, userId: 'alice', runId: 'run-1', outcome: 'matched', line: 'ready on port 5173', offset: 10 });
    await output(r.commandId, 'ready on port 5174\n');
    await sleep(500);
    expect(conditionEvents(await h.convEvents('conv-cw1'))).toHaveLength(1);
    expect((await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0].status).toBe('starting');
  });

  it('wakes once when the timeout passes first, saying so', async () => {
    const r = await registered('cw-2', 'conv-cw2');
    expect(await validate({ conversationId: 'conv-cw2', taskIds: [r.taskId], runId: 'run-2', conditions: [{ taskId: r.taskId, until: { outputMatches: 'ready' }, timeoutMs: 30_000 }] })).toMatchObject({ valid: true });
    await output(r.commandId, 'still booting\n');
    await sleep(300);
    (h.clock as FixedClock).advance(31_000);
    const met = await waitFor(async () => conditionEvents(await h.convEvents('conv-cw2'))[0], 15_000, 'condition timed out');
    expect(met.data).toMatchObject({ outcome: 'timed_out', taskId: r.taskId });
    expect(met.data.line).toBeUndefined();
    expect(met.data.detail).toMatch(/before the wait's timeout; the task is still/);
  });

  it('portOpen and fileExists: asks the task’s runner to probe its sandbox, and wakes once when it holds', async () => {
    const runner = await RunnerDouble.start(h.nats, h.t, h.clock, 'runner-probe');
    try {
      const r = ok(await h.startTask(startBody({ requestId: 'cw-p', conversationId: 'conv-cwp', command: 'npm run dev' })));
      await waitFor(async () => ((await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'running' ? true : undefined), 15_000, 'running');
      const conditions = [
        { taskId: r.taskId, until: { portOpen: 5173 } },
      ];
      expect(await validate({ conversationId: 'conv-cwp', taskIds: [r.taskId], runId: 'run-p', conditions })).toMatchObject({ valid: true });
      await waitFor(async () => (runner.probes.some((p) => p.commandId === r.commandId && p.what?.$case === 'port' && p.what.value === 5173) ? true : undefined), 15_000, 'a probe');
      await sleep(300);
      expect(conditionEvents(await h.convEvents('conv-cwp'))).toHaveLength(0);
      runner.probeAnswers.set('port:5173', { satisfied: true, detail: 'port 5173 accepted a connection' });
      const met = await waitFor(async () => conditionEvents(await h.convEvents('conv-cwp'))[0], 15_000, 'port condition met');
      expect(met.data).toMatchObject({ taskId: r.taskId, outcome: 'matched', until: { portOpen: 5173 }, detail: 'port 5173 accepted a connection' });
      const probesThen = runner.probes.length;
      await sleep(400);
      expect(runner.probes.length).toBe(probesThen); // resolved: asked no more
      expect(conditionEvents(await h.convEvents('conv-cwp'))).toHaveLength(1);

      // A later run waits for a file in the workspace.
      expect(await validate({ conversationId: 'conv-cwp', taskIds: [r.taskId], runId: 'run-p2', conditions: [{ taskId: r.taskId, until: { fileExists: 'dist/ready' } }] })).toMatchObject({ valid: true });
      runner.probeAnswers.set('path:dist/ready', { satisfied: true, detail: 'dist/ready exists' });
      const file = await waitFor(async () => conditionEvents(await h.convEvents('conv-cwp'))[1], 15_000, 'file condition met');
      expect(file.data).toMatchObject({ runId: 'run-p2', outcome: 'matched', until: { fileExists: 'dist/ready' }, detail: 'dist/ready exists' });
    } finally {
      await runner.stop();
    }
  });

  it('rejects the whole wait for a bad condition, with the reason, and registers nothing', async () => {
    const r = await registered('cw-3', 'conv-cw3');
    const cases: [object, RegExp][] = [
      [{ taskId: r.taskId, until: { outputMatches: '(a+)+$' } }, /catastrophic/],
      [{ taskId: r.taskId, until: { outputMatches: '[' } }, /not a valid regular expression/],
      [{ taskId: r.taskId, until: { fileExists: '../../etc/passwd' } }, /relative to the workspace/],
      [{ taskId: 'someone-elses', until: { outputMatches: 'x' } }, /must name a task of wait_for_tasks/],
    ];
    for (const [condition, reason] of cases) {
      const reply = await validate({ conversationId: 'conv-cw3', taskIds: [r.taskId], runId: 'run-3', conditions: [condition] });
      if (!reply.ok) throw new Error('rpc failed');
      expect(reply.valid).toBe(false);
      expect(reply.results.map((x) => x.reason ?? '').join(' ')).toMatch(reason);
    }
    expect((await h.pool.query(`SELECT count(*)::int AS n FROM task_wait_conditions WHERE conversation_id = 'conv-cw3'`)).rows[0].n).toBe(0);
    // Bad shapes are refused at the edge.
    expect(await validate({ conversationId: 'conv-cw3', taskIds: [r.taskId], conditions: [{ taskId: r.taskId, until: 'ready' }] })).toMatchObject({ ok: false, error: { code: 'validation' } });
  });
});
