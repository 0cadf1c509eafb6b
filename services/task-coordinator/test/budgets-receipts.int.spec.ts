import type { StartTaskReply } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskReceipt } from '@handplane/domain';
import type { FixedClock } from '@handplane/kernel';
import { ensureConversation, waitFor } from '@handplane/testing';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const convOfType = <T extends ConversationEvent['type']>(events: ConversationEvent[], type: T) => events.filter((e): e is Extract<ConversationEvent, { type: T }> => e.type === type);

/** What the log-ingestor appends once the exit record and every byte are durable. */
function exited(r: { taskId: string; commandId: string }, e: { exitCode: number | null; signal: string | null; reason: string }): SandboxCommandEvent[] {
  const ids = { commandId: r.commandId, taskId: r.taskId, attempt: 1 };
  const at = '2026-01-01T00:00:05.000Z';
  return [
    { type: 'CommandExited', data: { ...ids, runnerId: 'runner-double', exitCode: e.exitCode, signal: e.signal, endOffset: 4, startedAt: at, finishedAt: at, reason: e.reason }, metadata: { at } },
    { type: 'CommandResultReadable', data: { ...ids, outputBytes: 4 }, metadata: { at } },
  ];
}

describe('budgets and exit receipts (issue 10.4, 10.5; real NATS and Postgres, gRPC runner double)', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('budgets', { BUDGET_CONV_MAX_CONCURRENT: '2', BUDGET_CONV_MAX_RUNTIME_MS: '60000', BUDGET_TENANT_MAX_OUTPUT_BYTES: '1000', OVERDUE_GRACE_MS: '1000', OVERDUE_REPORT_INTERVAL_MS: '200' });
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  const projected = (taskId: string, status: string) =>
    waitFor(async () => ((await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [taskId])).rows[0]?.status === status ? true : undefined), 15_000, `${taskId} ${status}`);
  const startRunning = async (requestId: string, over: Partial<Parameters<typeof startBody>[0]> = {}) => {
    const r = ok(await h.startTask(startBody({ requestId, ...over })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    await projected(r.taskId, 'running');
    return r;
  };
  const receiptOf = async (taskId: string) => (await h.waitForTaskEvent(taskId, 'TaskFinished')).data.receipt as TaskReceipt;

  it('an exit by itself carries the receipt "exited with code N" in the event, the read model and the conversation', async () => {
    const r = await startRunning('rc-1', { conversationId: 'conv-rc' });
    await h.appendCommandEvents(r.commandId, exited(r, { exitCode: 3, signal: null, reason: '' }), `ingest:${r.commandId}`);
    const receipt = await receiptOf(r.taskId);
    expect(receipt).toMatchObject({ outcome: 'exited', status: 'failed', exitCode: 3, summary: 'exited with code 3', evidence: { runnerId: 'runner-double', epoch: 3, attempt: 1, outputBytes: 4 } });
    const row = await waitFor(async () => (await h.pool.query('SELECT receipt FROM tasks WHERE task_id = $1 AND receipt IS NOT NULL', [r.taskId])).rows[0], 15_000, 'receipt row');
    expect(row.receipt).toEqual(receipt);
    const conv = await waitFor(async () => {
      const ev = await h.convEvents('conv-rc');
      return convOfType(ev, 'task.internal_event').length === 1 ? ev : undefined;
    }, 15_000, 'internal event');
    expect(convOfType(conv, 'task.finished')[0]!.data.receipt).toEqual(receipt);
    expect(convOfType(conv, 'task.internal_event')[0]!.data.receipt).toEqual(receipt);
  });

  it('a user stop: "killed by SIGTERM at the request of user …"', async () => {
    const r = await startRunning('rc-2', { conversationId: 'conv-rc2' });
    expect(await h.stopTask({ taskId: r.taskId, userId: 'bob' })).toMatchObject({ ok: true, status: 'stopping' });
    await h.waitForTaskEvent(r.taskId, 'TaskStopSignalled');
    await h.appendCommandEvents(r.commandId, exited(r, { exitCode: null, signal: 'SIGTERM', reason: 'stopped' }), `ingest:${r.commandId}`);
    expect(await receiptOf(r.taskId)).toMatchObject({ outcome: 'killed', status: 'cancelled', signal: 'SIGTERM', requestedBy: { reason: 'user', by: 'bob' }, summary: 'killed by SIGTERM at the request of user bob' });
  });

  it('refuses a task over the conversation’s concurrency budget with a clear reason, and admits one again once a task finished', async () => {
    const a = await startRunning('cc-a', { conversationId: 'conv-cc' });
    await startRunning('cc-b', { conversationId: 'conv-cc' });
    const refused = await h.startTask(startBody({ requestId: 'cc-c', conversationId: 'conv-cc' }));
    expect(refused).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect(!refused.ok && refused.error.message).toMatch(/budget exceeded: this conversation already has 2 unfinished tasks, its limit is 2 concurrent tasks/);
    // A retried request of a task that exists answers it; another conversation is not affected.
    expect(ok(await h.startTask(startBody({ requestId: 'cc-a', conversationId: 'conv-cc' }))).taskId).toBe(a.taskId);
    ok(await h.startTask(startBody({ requestId: 'cc-other', conversationId: 'conv-cc-2' })));

    await h.appendCommandEvents(a.commandId, exited(a, { exitCode: 0, signal: null, reason: '' }), `ingest:${a.commandId}`);
    await projected(a.taskId, 'succeeded');
    ok(await h.startTask(startBody({ requestId: 'cc-d', conversationId: 'conv-cc' })));
  });

  it('racing starts never overshoot the concurrency budget: of six at once, exactly two start', async () => {
    await ensureConversation(h.nats, h.t, 'conv-race', 'acme');
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => h.startTask(startBody({ requestId: `race-${i}`, conversationId: 'conv-race' }), { create: false })));
    const started = replies.filter((r) => r.ok);
    const refused = replies.filter((r) => !r.ok);
    expect({ started: started.length, refused: refused.length }).toEqual({ started: 2, refused: 4 });
    for (const r of refused) expect(!r.ok && r.error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/limit is 2 concurrent tasks/) });
    // Nothing else was registered in that conversation (the refused ones left no task behind).
    const rows = await h.pool.query('SELECT count(*)::int AS n FROM tasks WHERE conversation_id = $1', ['conv-race']);
    expect(rows.rows[0].n).toBe(2);
    // A retried request of a started task still answers it (the budget is full, but it is not new).
    const first = replies.findIndex((r) => r.ok);
    const again = await h.startTask(startBody({ requestId: `race-${first}`, conversationId: 'conv-race' }), { create: false });
    expect(ok(again).taskId).toBe((replies[first] as Ok).taskId);
  });

  it('stops a running task whose tenant went over its output budget (the ingestor’s committed bytes), with a policy receipt', async () => {
    const r = await startRunning('out-1', { conversationId: 'conv-out', tenant: 'globex' });
    // What the log-ingestor has committed for the running command.
    await h.pool.query(`INSERT INTO ingest_cursors (command_id, task_id, conversation_id, attempt, runner_id, committed_offset) VALUES ($1, $2, 'conv-out', 1, 'runner-double', 4096)`, [r.commandId, r.taskId]);
    const stop = await h.waitForTaskEvent(r.taskId, 'TaskStopRequested');
    expect(stop.data).toMatchObject({ reason: 'policy', requestedBy: 'system:budgets', detail: 'budget: tenant output 1000 bytes' });
    await waitFor(async () => (runner.signalsOf(r.commandId).length > 0 ? true : undefined), 15_000, 'signal');
    const refused = await h.startTask(startBody({ requestId: 'out-2', conversationId: 'conv-out-2', tenant: 'globex' }));
    expect(!refused.ok && refused.error.message).toMatch(/budget exceeded: this tenant has produced 4096 bytes of output, its limit is 1000 bytes/);
    await h.appendCommandEvents(r.commandId, exited(r, { exitCode: null, signal: 'SIGTERM', reason: 'stopped' }), `ingest:${r.commandId}`);
    expect(await receiptOf(r.taskId)).toMatchObject({ outcome: 'killed', status: 'cancelled', summary: 'killed by SIGTERM by policy (budget: tenant output 1000 bytes)' });
  });

  // Last: moving the clock ages every running task of this harness.
  it('stops a running task once its conversation used up its runtime budget, and refuses new ones there', async () => {
    const r = await startRunning('rt-1', { conversationId: 'conv-rt' });
    await new Promise((res) => setTimeout(res, 300));
    expect((await h.taskEvents(r.taskId)).map((e) => e.type)).not.toContain('TaskStopRequested');
    (h.clock as FixedClock).advance(61_000);
    const stop = await h.waitForTaskEvent(r.taskId, 'TaskStopRequested');
    expect(stop.data).toMatchObject({ reason: 'policy', detail: 'budget: conversation runtime 60000 ms' });
    const refused = await h.startTask(startBody({ requestId: 'rt-2', conversationId: 'conv-rt' }));
    expect(!refused.ok && refused.error.message).toMatch(/budget exceeded: this conversation has used \d+ ms of task runtime, its limit is 60000 ms/);
    await h.appendCommandEvents(r.commandId, exited(r, { exitCode: null, signal: 'SIGKILL', reason: 'killed' }), `ingest:${r.commandId}`);
    expect((await receiptOf(r.taskId)).summary).toBe('killed by SIGKILL by policy (budget: conversation runtime 60000 ms)');
  });

  it('publishes a periodic report of unfinished tasks past their deadline (issue 10.3)', async () => {
    const r = await startRunning('od-1', { conversationId: 'conv-od', tenant: 'initech', timeoutMs: 2000 });
    const sub = h.nats.nc.subscribe(h.t.reports.overdue);
    try {
      // The deadline sweep stops it, but no exit is ever proven: it stays `stopping` past its deadline.
      (h.clock as FixedClock).advance(5000);
      await h.waitForTaskEvent(r.taskId, 'TaskStopRequested');
      let found: { count: number; graceMs: number; tasks: { taskId: string; status: string; overdueMs: number }[] } | undefined;
      for await (const m of sub) {
        const report = m.json<NonNullable<typeof found>>();
        if (report.tasks.some((t) => t.taskId === r.taskId && t.status === 'stopping')) {
          found = report;
          break;
        }
      }
      expect(found!.graceMs).toBe(1000);
      expect(found!.count).toBeGreaterThanOrEqual(1);
      expect(found!.tasks.find((t) => t.taskId === r.taskId)!.overdueMs).toBeGreaterThanOrEqual(3000);
      // Once its exit is proven it leaves the report.
      await h.appendCommandEvents(r.commandId, exited(r, { exitCode: null, signal: 'SIGTERM', reason: 'stopped' }), `ingest:${r.commandId}`);
      await projected(r.taskId, 'timed_out');
      const later = h.nats.nc.subscribe(h.t.reports.overdue);
      try {
        for await (const m of later) if (!m.json<NonNullable<typeof found>>().tasks.some((t) => t.taskId === r.taskId)) break;
      } finally {
        later.unsubscribe();
      }
    } finally {
      sub.unsubscribe();
    }
  });
});
