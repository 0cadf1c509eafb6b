import { waitForProjection } from '@handplane/platform';
import { insertTask, publishConv } from './doubles';
import { expectError, startHarness, type Harness } from './harness';

/** Issue 10.3 and 10.4 at the HTTP API: the registry's `user` and `overdue` filters, the overdue report, receipts on tasks. */
describe('task registry: overdue report, user filter, receipts (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];
  const bob: [string, string] = ['bob', 'acme'];
  const mallory: [string, string] = ['mallory', 'evil'];
  beforeAll(async () => {
    h = await startHarness('gwreg', { OVERDUE_GRACE_MS: '60000' });
  });
  afterAll(() => h?.stop());

  const setRow = (taskId: string, sql: string, params: unknown[] = []) => h.pool.query(`UPDATE tasks SET ${sql} WHERE task_id = $1`, [taskId, ...params]);
  const ids = async (q: string, as: [string, string] = alice) => {
    const r = await h.call('GET', `/v1/tasks${q}`, as);
    expect(r.status).toBe(200);
    return (r.json as { taskId: string }[]).map((t) => t.taskId).sort();
  };

  it('lists only unfinished tasks past their deadline plus the grace, and reports their count', async () => {
    const c = await h.conversation(alice);
    const notMine = await h.conversation(bob);
    const overdue = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'stopping' });
    await setRow(overdue, `deadline_at = now() - interval '10 minutes', timeout_ms = 1000`);
    const neverStarted = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'starting' });
    await setRow(neverStarted, `created_at = now() - interval '2 hours', timeout_ms = 3600000`);
    const withinGrace = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'running' });
    await setRow(withinGrace, `deadline_at = now() - interval '10 seconds', timeout_ms = 1000`);
    const finished = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'failed' });
    await setRow(finished, `deadline_at = now() - interval '10 minutes', timeout_ms = 1000`);
    const someoneElses = await insertTask(h, { conversationId: notMine, tenant: 'acme', userId: 'bob', status: 'running' });
    await setRow(someoneElses, `deadline_at = now() - interval '10 minutes', timeout_ms = 1000`);

    expect(await ids('?overdue=true')).toEqual([overdue, neverStarted].sort());
    expect(await ids('?overdue=false')).toEqual([overdue, neverStarted, withinGrace, finished].sort());
    const report = await h.call('GET', '/v1/tasks/overdue', alice);
    expect(report.status).toBe(200);
    expect(report.json).toMatchObject({ graceMs: 60000, count: 2 });
    expect((report.json.tasks as { taskId: string }[]).map((t) => t.taskId).sort()).toEqual([overdue, neverStarted].sort());
    // Another user of the tenant sees their own; another tenant sees nothing.
    expect((await h.call('GET', '/v1/tasks/overdue', bob)).json).toMatchObject({ count: 1, tasks: [{ taskId: someoneElses }] });
    expect((await h.call('GET', '/v1/tasks/overdue', mallory)).json).toMatchObject({ count: 0, tasks: [] });
  });

  it('filters by the user who started the task', async () => {
    const c = await h.conversation(alice);
    expect((await h.call('POST', `/v1/conversations/${c}/members`, alice, { userId: 'bob' })).status).toBe(204);
    const a = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice' });
    const b = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'bob' });
    expect(await ids(`?conversation=${c}&user=bob`)).toEqual([b]);
    expect(await ids(`?conversation=${c}&user=alice`, bob)).toEqual([a]);
    expect(await ids(`?conversation=${c}&user=nobody`)).toEqual([]);
  });

  it('refuses bad filter values with 422', async () => {
    for (const q of ['?overdue=yes', '?overdue=1', `?user=${'x'.repeat(201)}`, '?user=a&user=b', '?awaiting=yes', '?awaiting=true&awaiting=false']) {
      expectError(await h.call('GET', `/v1/tasks${q}`, alice), 422, 'validation');
    }
  });

  it('says which running tasks wait for input (awaitingInput, ?awaiting=true) until input comes, a new attempt runs or the task ends', async () => {
    const c = await h.conversation(alice);
    const asking = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice' });
    const answered = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice' });
    const retried = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice' });
    const quiet = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice' });
    const at = new Date().toISOString();
    const prompt = (taskId: string, attempt: number, text: string) =>
      publishConv(h, c, { type: 'task.awaiting_input', data: { taskId, commandId: `cmd-${taskId}`, attempt, offset: 10, prompt: text }, metadata: { at, actor: 'system:log-ingestor' } }, `prompt:${taskId}:${attempt}:${text}`);
    await prompt(asking, 1, 'Continue? [y/N]');
    await prompt(answered, 1, 'Password:');
    await publishConv(h, c, { type: 'task.stdin', data: { taskId: answered, commandId: `cmd-${answered}`, attempt: 1, by: 'alice', via: 'user', bytes: 4, sha256: 'x', closed: false }, metadata: { at, actor: 'alice' } }, `stdin:${answered}`);
    const last = await prompt(retried, 1, 'Overwrite? [y/N]');
    await setRow(retried, 'attempt = 2'); // the prompt was the first attempt's
    expect(await waitForProjection(h.pool, 'task-prompts', last, 10_000)).toBe(true);

    const one = await h.call('GET', `/v1/tasks/${asking}`, alice);
    expect(one.json.awaitingInput).toEqual({ prompt: 'Continue? [y/N]', offset: 10, attempt: 1, since: at });
    expect((await h.call('GET', `/v1/tasks/${answered}`, alice)).json.awaitingInput).toBeNull();
    expect(await ids(`?conversation=${c}&awaiting=true`)).toEqual([asking]);
    expect(await ids(`?conversation=${c}&awaiting=false`)).toEqual([answered, retried, quiet].sort());
    const listed = (await h.call('GET', `/v1/conversations/${c}/tasks`, alice)).json as { taskId: string; awaitingInput: unknown }[];
    expect(listed.filter((t) => t.awaitingInput).map((t) => t.taskId)).toEqual([asking]);
    // A later prompt of the answered task asks again; the asking task ends: no longer awaiting.
    const again = await prompt(answered, 1, 'Password again:');
    await setRow(asking, `status = 'succeeded'`);
    expect(await waitForProjection(h.pool, 'task-prompts', again, 10_000)).toBe(true);
    expect(await ids(`?conversation=${c}&awaiting=true`)).toEqual([answered]);
    // Another tenant sees none of it.
    expect(await ids('?awaiting=true', mallory)).toEqual([]);
  });

  it('shows the receipt of a finished task, and null for one that is not', async () => {
    const c = await h.conversation(alice);
    const receipt = {
      outcome: 'killed',
      status: 'cancelled',
      exitCode: null,
      signal: 'SIGTERM',
      requestedBy: { reason: 'user', by: 'bob', at: '2026-01-01T00:00:02.000Z' },
      summary: 'killed by SIGTERM at the request of user bob',
      evidence: { runnerId: 'r-1', epoch: 1, attempt: 1, startedAt: '2026-01-01T00:00:01.000Z', finishedAt: '2026-01-01T00:00:03.000Z', outputBytes: 4, resultState: 'readable', exitReason: 'stopped' },
    };
    const done = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'cancelled' });
    await setRow(done, 'receipt = $2', [JSON.stringify(receipt)]);
    const live = await insertTask(h, { conversationId: c, tenant: 'acme', userId: 'alice', status: 'running' });
    expect((await h.call('GET', `/v1/tasks/${done}`, alice)).json.receipt).toEqual(receipt);
    expect((await h.call('GET', `/v1/tasks/${live}`, alice)).json.receipt).toBeNull();
  });
});
