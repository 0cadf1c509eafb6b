import { waitFor } from '@handplane/testing';
import { Api } from './client';
import { startStack, type Stack } from './stack';

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/**
 * Issue 10 (parts 3, 4, 5) through the public API on the whole stack, and the scripted model:
 * exit receipts, a conversation concurrency budget, the registry's user and overdue views.
 */
describe('task governance: receipts, budgets, registry (e2e)', () => {
  let stack: Stack;
  let alice: Api;
  let mallory: Api;

  beforeAll(async () => {
    stack = await startStack({ FOREGROUND_WINDOW_MS: '1500', STOP_GRACE_MS: '3000', BUDGET_CONV_MAX_CONCURRENT: '1' });
    alice = new Api(stack.baseUrls, await stack.token('alice', 'acme'));
    mallory = new Api(stack.baseUrls, await stack.token('mallory', 'evil'));
  }, 180_000);
  afterAll(() => stack?.stop(), 60_000);

  const conversation = async (title: string) => {
    const r = await alice.call('POST', '/v1/conversations', { title });
    expect(r.status).toBe(201);
    return r.json.id as string;
  };
  const finished = (taskId: string) =>
    waitFor(async () => {
      const t = await alice.call('GET', `/v1/tasks/${taskId}`);
      return TERMINAL.includes(t.json?.status) && t.json.receipt ? t.json : undefined;
    }, 60_000, `task ${taskId} to finish with a receipt`, 200);

  it('refuses a second concurrent task over the conversation budget (403, with the reason); stopping the first gives a receipt that says who asked', async () => {
    const conv = await conversation('budget');
    const first = await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: 'sleep 60' });
    expect(first.status).toBe(201);
    const second = await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: 'echo second' });
    expect(second.status).toBe(403);
    expect(second.json.error).toEqual({ code: 'forbidden', message: expect.stringMatching(/^budget exceeded: this conversation already has 1 unfinished tasks, its limit is 1 concurrent tasks/) });
    // Another conversation has its own budget.
    const other = await conversation('budget-2');
    expect((await alice.call('POST', `/v1/conversations/${other}/commands`, { command: 'exit 3' })).status).toBe(201);

    const taskId = first.json.taskId as string;
    await waitFor(async () => ((await alice.call('GET', `/v1/tasks/${taskId}`)).json.status === 'running' ? true : undefined), 30_000, 'running', 100);
    expect((await alice.call('POST', `/v1/tasks/${taskId}/stop`, {})).status).toBe(202);
    const t = await finished(taskId);
    expect(t.status).toBe('cancelled');
    expect(t.receipt).toMatchObject({ outcome: 'killed', status: 'cancelled', requestedBy: { reason: 'user', by: 'alice' }, evidence: { attempt: 1, epoch: expect.any(Number), runnerId: expect.any(String) } });
    expect(t.receipt.summary).toMatch(/^killed by SIG(TERM|KILL) at the request of user alice$/);
    // Finished: the conversation may start again.
    expect((await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: 'echo again' })).status).toBe(201);
  });

  it('an exit by itself: "exited with code N" in the API and the conversation’s task.finished', async () => {
    const conv = await conversation('receipt');
    const r = await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: 'printf abc; exit 3' });
    const t = await finished(r.json.taskId);
    expect(t.receipt).toMatchObject({ outcome: 'exited', exitCode: 3, summary: 'exited with code 3', evidence: { outputBytes: 3, resultState: 'readable' } });
    const audit = await alice.call('GET', `/v1/conversations/${conv}/audit`);
    const fin = (audit.json as { type: string; data: { receipt?: { summary: string } } }[]).find((e) => e.type === 'task.finished');
    expect(fin?.data.receipt?.summary).toBe('exited with code 3');
  });

  it('the scripted model is woken with the receipt and reports a kill as its receipt says', async () => {
    const conv = await conversation('agent');
    expect((await alice.call('POST', `/v1/conversations/${conv}/messages`, { text: '$ sleep 60' })).status).toBe(202);
    const task = await waitFor(async () => {
      const ts = (await alice.call('GET', `/v1/conversations/${conv}/tasks`)).json as { taskId: string; background: boolean }[];
      return ts.find((x) => x.background);
    }, 60_000, 'the agent’s task in the background', 200);
    expect((await alice.call('POST', `/v1/tasks/${task.taskId}/stop`, {})).status).toBe(202);
    await finished(task.taskId);
    const summary = await waitFor(async () => {
      const audit = (await alice.call('GET', `/v1/conversations/${conv}/audit`)).json as { type: string; data: { text?: string } }[];
      return audit.filter((e) => e.type === 'assistant.message').map((e) => e.data.text ?? '').find((x) => x.includes('`sleep 60` →'));
    }, 60_000, 'the agent’s summary', 200);
    expect(summary).toMatch(/`sleep 60` → killed by SIG(TERM|KILL) at the request of user alice \(cancelled\)/);
  });

  it('the registry filters by user and shows nothing overdue here; other tenants see nothing', async () => {
    const mine = (await alice.call('GET', '/v1/tasks?status=finished&user=alice')).json as { userId: string }[];
    expect(mine.length).toBeGreaterThanOrEqual(3);
    expect(mine.every((x) => x.userId === 'alice')).toBe(true);
    expect((await alice.call('GET', '/v1/tasks?user=bob')).json).toEqual([]);
    const overdue = await alice.call('GET', '/v1/tasks/overdue');
    expect(overdue.status).toBe(200);
    expect(overdue.json).toMatchObject({ count: 0, tasks: [], graceMs: expect.any(Number) });
    expect((await mallory.call('GET', '/v1/tasks?status=finished')).json).toEqual([]);
    expect((await alice.call('GET', '/v1/tasks?overdue=maybe')).status).toBe(422);
  });
});
