import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { topology } from '@handplane/contracts';
import { connectNats, EventStore } from '@handplane/platform';
import { NATS_URL, waitFor } from '@handplane/testing';
import { ARTIFACTS, consolePage, launchChromium, signInWithDevToken, signInWithToken, taskStatus, timelineSeqs } from './browser';
import { Api } from './client';
import { startStack, type Stack } from './stack';

/**
 * The web console in headless Chromium against the whole stack: two people in one conversation,
 * a command that goes to the background, Stop (with Stopping visible), Stop all, and a network
 * drop that loses and repeats nothing.
 */
describe('web console (e2e, headless Chromium)', () => {
  let stack: Stack;
  let browser: Browser;
  let alice: Page;
  let bob: Page;
  let conversationId: string;
  const problems: string[] = [];

  beforeAll(async () => {
    // A short window, so a command goes to the background in 2 s; a long stop grace, so Stopping lasts.
    stack = await startStack({ FOREGROUND_WINDOW_MS: '2000', SSE_HEARTBEAT_MS: '1000', STOP_GRACE_MS: '6000' });
    browser = await launchChromium();
    alice = await consolePage(browser, problems);
    bob = await consolePage(browser, problems);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    // The services' logs, kept with the screenshots (CI keeps the folder).
    if (stack) writeFileSync(join(ARTIFACTS, 'console-e2e-services.log'), stack.logs.join('\n'));
    await stack?.stop();
  }, 60_000);
  afterEach(() => {
    expect(problems).toEqual([]);
  });

  const row = (page: Page, taskId: string) => page.locator(`[data-testid="task-row"][data-task-id="${taskId}"]`);

  it('refuses a token that is not a JWT on the sign-in page', async () => {
    await alice.goto(`${stack.baseUrl}/`);
    await alice.getByTestId('token-input').fill('not-a-token');
    await alice.getByTestId('sign-in').click();
    await alice.getByTestId('login-error').filter({ hasText: 'cannot be used' }).waitFor();
  });

  it('puts two people in one conversation: both see who is in it', async () => {
    await signInWithDevToken(alice, stack.baseUrl, 'alice', 'acme');
    await alice.getByTestId('new-title').fill('Release checks');
    await alice.getByTestId('new-conversation').click();
    await alice.getByTestId('conversation-title').filter({ hasText: 'Release checks' }).waitFor();
    conversationId = (await alice.getByTestId('conversation-id').textContent())!;
    expect(alice.url()).toContain(`#/c/${conversationId}`);
    await alice.getByTestId('add-member-input').fill('bob');
    await alice.getByTestId('add-member').click();
    await alice.locator('[data-testid="member"][data-user="bob"]').waitFor();

    await signInWithToken(bob, stack.baseUrl, await stack.token('bob', 'acme'));
    await bob.getByTestId('open-id').fill(`${stack.baseUrl}/#/c/${conversationId}`);
    await bob.getByTestId('open-conversation').click();
    await bob.getByTestId('conversation-title').filter({ hasText: 'Release checks' }).waitFor();
    for (const page of [alice, bob]) {
      await page.locator('[data-testid="connection"][data-state="live"]').waitFor();
      expect(await page.$$eval('[data-testid="member"]', (els) => els.map((e) => (e as HTMLElement).dataset.user))).toEqual(['alice', 'bob']);
    }
    // The conversation is in both people's lists now.
    await bob.locator(`[data-testid="conversation-link"][data-id="${conversationId}"]`).waitFor();
  });

  it('shows whose turn a run is, the todo list, and the agent’s background task, live to the other person', async () => {
    await bob.getByTestId('composer-input').fill('$ sleep 3; echo done-by-bob');
    await bob.getByTestId('send-message').click();
    // Alice sees the agent working for bob: his turn, his todo, his task going to the background.
    await alice.locator('[data-testid="run-status"][data-user="bob"]').waitFor({ timeout: 20_000 });
    await alice.locator('[data-testid="member"][data-user="bob"].turn').waitFor();
    await alice.getByTestId('todo').filter({ hasText: 'sleep 3; echo done-by-bob' }).waitFor();
    const agentTask = alice.locator('[data-testid="task-row"]').filter({ hasText: 'sleep 3; echo done-by-bob' });
    await agentTask.locator('[data-testid="task-status"][data-state="backgrounded"]').waitFor({ timeout: 20_000 });
    await alice.locator('[data-testid="run-status"][data-status="waiting"]').waitFor();
    // The finished task wakes the agent as bob; the todo completes and the turn ends.
    await agentTask.locator('[data-testid="task-status"][data-state="succeeded"]').waitFor({ timeout: 30_000 });
    // The task card says how it ended (issue 10.4).
    await agentTask.getByTestId('task-receipt').filter({ hasText: 'exited with code 0' }).waitFor({ timeout: 45_000 });
    await alice.locator('[data-testid="todo"][data-status="completed"]').filter({ hasText: 'sleep 3; echo done-by-bob' }).waitFor({ timeout: 30_000 });
    await alice.locator('[data-testid="run-status"][data-status="idle"]').waitFor({ timeout: 30_000 });
    await alice.getByTestId('system-note').filter({ hasText: 'Agent\'s turn for bob (a task finished)' }).waitFor();
    await bob.getByTestId('assistant-message').filter({ hasText: 'exit 0' }).waitFor();
  });

  it('shows a question card to everyone; one answer resolves it for all', async () => {
    await alice.getByTestId('composer-input').fill('? Which branch should I deploy?');
    await alice.getByTestId('send-message').click();
    const card = bob.getByTestId('question-card').filter({ hasText: 'Which branch should I deploy?' });
    await card.waitFor({ timeout: 20_000 });
    await card.getByTestId('answer-input').fill('main');
    await card.getByTestId('answer').click();
    await alice.getByTestId('question-outcome').filter({ hasText: 'Answered by bob: main' }).waitFor({ timeout: 20_000 });
    await bob.getByTestId('question-outcome').filter({ hasText: 'Answered by bob: main' }).waitFor();
    await alice.locator('[data-testid="run-status"][data-status="idle"]').waitFor({ timeout: 30_000 });
  });

  it('shows a condition wait (issue 10.1): the agent goes on once the output matches, the row says ready, the timeline says so once', async () => {
    const api = new Api(stack.baseUrl, await stack.token('alice', 'acme'));
    const cmd = "sh -c 'sleep 3; echo ready; sleep 8; echo bye'";
    await alice.getByTestId('composer-input').fill(`$ ${cmd}\n~ output ^ready$\n$ echo after-ready`);
    await alice.getByTestId('send-message').click();
    const server = alice.locator('[data-testid="task-row"]').filter({ hasText: cmd });
    // While it still runs: the ready chip, the note, and the next command already run and done.
    await server.getByTestId('task-ready').waitFor({ timeout: 30_000 });
    await bob.getByTestId('system-note').filter({ hasText: 'its output matches /^ready$/ (“ready”). It keeps running; the agent is told, as alice' }).waitFor({ timeout: 15_000 });
    await alice.locator('[data-testid="task-row"]').filter({ hasText: 'echo after-ready' }).locator('[data-testid="task-status"][data-state="succeeded"]').waitFor({ timeout: 30_000 });
    // Then it exits: no more chip, the todos complete, and the summary tells both.
    await server.locator('[data-testid="task-status"][data-state="succeeded"]').waitFor({ timeout: 30_000 });
    expect(await server.getByTestId('task-ready').count()).toBe(0);
    await alice.locator('[data-testid="todo"][data-status="completed"]').filter({ hasText: 'echo after-ready' }).waitFor({ timeout: 30_000 });
    await alice.locator('[data-testid="todo"][data-status="completed"]').filter({ hasText: 'sleep 3; echo ready' }).waitFor({ timeout: 30_000 });
    await alice.locator('[data-testid="run-status"][data-status="idle"]').waitFor({ timeout: 30_000 });
    await bob.getByTestId('assistant-message').filter({ hasText: 'ready (a line of its output matched "^ready$"), then exit 0' }).waitFor({ timeout: 15_000 });
    expect(await alice.getByTestId('system-note').filter({ hasText: 'Condition met for' }).count()).toBe(1);

    // The log: one condition_met, matched on the line; the next command started after it and before the exit.
    const audit = (await api.call('GET', `/v1/conversations/${conversationId}/audit?limit=5000`)).json as { seq: number; type: string; data: { taskId?: string; command?: string; userId?: string; outcome?: string; line?: string; until?: unknown } }[];
    const serverTask = audit.find((e) => e.type === 'task.started' && e.data.command === cmd)!.data.taskId!;
    const met = audit.filter((e) => e.type === 'task.condition_met');
    expect(met.map((e) => ({ taskId: e.data.taskId, outcome: e.data.outcome, line: e.data.line, until: e.data.until }))).toEqual([{ taskId: serverTask, outcome: 'matched', line: 'ready', until: { outputMatches: '^ready$' } }]);
    const next = audit.find((e) => e.type === 'task.started' && e.data.command === 'echo after-ready')!;
    const exit = audit.find((e) => e.type === 'task.finished' && e.data.taskId === serverTask)!;
    expect(next.seq).toBeGreaterThan(met[0]!.seq);
    expect(next.seq).toBeLessThan(exit.seq);
    // Woken twice for the server, once per thing that happened (the condition, the exit), never more.
    const woken = audit.filter((e) => e.type === 'run.started' && e.data.taskId === serverTask);
    expect(woken).toHaveLength(2);
    expect(woken.every((e) => e.data.userId === 'alice')).toBe(true);
  });

  let longTask: string;

  it('shows a command streaming its output, then going to the background, to both people', async () => {
    // Ignores SIGTERM (so does its sleep), so the stop below stays in Stopping until the grace ends.
    await alice.getByTestId('composer-input').fill("trap '' TERM; echo begin; sleep 40; echo never");
    await alice.getByTestId('run-command').click();
    const longRow = alice.locator('[data-testid="task-row"]').filter({ hasText: "trap '' TERM" });
    await longRow.waitFor();
    longTask = (await longRow.getAttribute('data-task-id'))!;
    await alice.locator(`[data-testid="timeline-task"][data-task-id="${longTask}"] [data-testid="inline-output"]`).filter({ hasText: 'begin' }).waitFor();
    await taskStatus(alice, longTask, 'backgrounded', 20_000);
    await taskStatus(bob, longTask, 'backgrounded', 20_000);
    expect(await row(bob, longTask).getByTestId('task-result').textContent()).toBe('result pending');
    // The log view backfills from the output API (the live chunks came before it opened).
    await longRow.getByTestId('open-log').click();
    await alice.getByTestId('log-output').filter({ hasText: 'begin' }).waitFor();
  });

  it('recovers after a network drop: what happened meanwhile appears once, nothing is lost or repeated', async () => {
    await bob.context().setOffline(true);
    await bob.locator('[data-testid="connection"]:not([data-state="live"])').waitFor({ timeout: 15_000 });
    const text = `while bob was offline ${Date.now()}`;
    await alice.getByTestId('composer-input').fill(text);
    await alice.getByTestId('send-message').click();
    await alice.locator('[data-testid="message"][data-seq]').filter({ hasText: text }).waitFor();
    // Another event bob misses: a member joins.
    expect((await new Api(stack.baseUrl, await stack.token('alice', 'acme')).call('POST', `/v1/conversations/${conversationId}/members`, { userId: 'carol' })).status).toBe(204);
    await alice.locator('[data-testid="member"][data-user="carol"]').waitFor();
    expect(await bob.locator('[data-testid="message"]').filter({ hasText: text }).count()).toBe(0);

    await bob.context().setOffline(false);
    await bob.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: 30_000 });
    await bob.locator('[data-testid="message"]').filter({ hasText: text }).waitFor();
    await bob.locator('[data-testid="member"][data-user="carol"]').waitFor();
    // Both timelines settle on the same events, each once.
    let seen = { alice: [] as number[], bob: [] as number[] };
    await waitFor(
      async () => {
        seen = { alice: await timelineSeqs(alice), bob: await timelineSeqs(bob) };
        return seen.alice.join() === seen.bob.join();
      },
      20_000,
      'both timelines to hold the same events',
    ).catch((e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(seen)}`);
    });
    const seqs = await timelineSeqs(bob);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(await bob.locator('[data-testid="message"]').filter({ hasText: text }).count()).toBe(1);
  });

  it('stops a task: both people see Stopping, then cancelled; a screenshot is kept', async () => {
    await row(bob, longTask).getByTestId('stop-task').click();
    // Alice learns it from the event stream (bob's page also shows it from the 202).
    await taskStatus(alice, longTask, 'stopping', 10_000);
    await taskStatus(bob, longTask, 'stopping', 10_000);
    await alice.getByTestId('log-status').filter({ hasText: 'stopping' }).waitFor();
    await alice.screenshot({ path: join(ARTIFACTS, 'console.png') });
    await taskStatus(alice, longTask, 'cancelled', 30_000);
    await taskStatus(bob, longTask, 'cancelled', 30_000);
    // Readable, or already delivered: alice's log view follows this task and reads its last byte.
    await row(alice, longTask).locator('[data-testid="task-result"][data-state="readable"], [data-testid="task-result"][data-state="delivered"]').waitFor({ timeout: 15_000 });
    expect(await row(alice, longTask).getByTestId('stop-task').count()).toBe(0);
    // Its receipt names the signal and who asked, on both pages (from the event stream and from the API).
    for (const page of [alice, bob]) await row(page, longTask).getByTestId('task-receipt').filter({ hasText: /killed by SIG(TERM|KILL) at the request of user bob/ }).waitFor({ timeout: 45_000 });
  });

  it('follows the log of a background task live: output written after the window shows without a refresh', async () => {
    await alice.getByTestId('composer-input').fill('echo first-part; sleep 5; echo written-in-the-background; sleep 30');
    await alice.getByTestId('run-command').click();
    const bgRow = alice.locator('[data-testid="task-row"]').filter({ hasText: 'written-in-the-background' });
    await bgRow.waitFor({ timeout: 15_000 });
    const taskId = (await bgRow.getAttribute('data-task-id'))!;
    await taskStatus(alice, taskId, 'backgrounded', 20_000);
    await bgRow.getByTestId('open-log').click();
    await alice.getByTestId('log-output').filter({ hasText: 'first-part' }).waitFor();
    // No task event comes between the window and this line: only the follow stream can bring it.
    await alice.getByTestId('log-output').filter({ hasText: 'written-in-the-background' }).waitFor({ timeout: 20_000 });
    expect(await row(alice, taskId).getByTestId('task-status').getAttribute('data-state')).toBe('backgrounded');
    expect(await alice.getByTestId('log-output').textContent()).toBe('first-part\nwritten-in-the-background\n');
    await row(alice, taskId).getByTestId('stop-task').click();
    await taskStatus(alice, taskId, 'cancelled', 30_000);
  });

  it('stops everything with Stop all (two clicks)', async () => {
    await bob.getByTestId('composer-input').fill('sleep 45');
    await bob.getByTestId('run-command').click();
    const sleeper = alice.locator('[data-testid="task-row"]').filter({ hasText: 'sleep 45' });
    await sleeper.waitFor({ timeout: 15_000 });
    const taskId = await sleeper.getAttribute('data-task-id');
    await taskStatus(alice, taskId!, 'backgrounded', 20_000);
    await alice.getByTestId('stop-all').click();
    await alice.getByTestId('stop-all').filter({ hasText: 'Confirm' }).waitFor();
    await alice.getByTestId('stop-all').click();
    await taskStatus(bob, taskId!, 'cancelled', 30_000);
    await bob.getByTestId('system-note').filter({ hasText: 'alice stopped everything' }).waitFor();
  });

  it('shows an approval card to everyone; Approve resolves it for all', async () => {
    // The runtime has no approval policy yet: publish what it will publish, on the real stream.
    const nats = await connectNats(NATS_URL, 'e2e-approval');
    try {
      const event = { type: 'approval.requested' as const, data: { approvalId: 'approval-1', runId: 'run-policy', command: 'rm -rf build/', reason: 'deletes files outside the workspace cache' }, metadata: { at: new Date().toISOString(), actor: 'policy' } };
      await new EventStore(nats).publish(topology(stack.prefix).conv(conversationId), event, `e2e-approval:${conversationId}`);
    } finally {
      await nats.nc.drain();
    }
    const card = alice.getByTestId('approval-card').filter({ hasText: 'rm -rf build/' });
    await card.waitFor({ timeout: 15_000 });
    await bob.getByTestId('approval-card').filter({ hasText: 'deletes files outside the workspace cache' }).waitFor();
    await card.getByTestId('approve').click();
    await bob.getByTestId('approval-outcome').filter({ hasText: 'Approved by alice' }).waitFor({ timeout: 15_000 });
    await alice.getByTestId('approval-outcome').filter({ hasText: 'Approved by alice' }).waitFor();
    expect(await bob.getByTestId('approval-card').getByTestId('approve').count()).toBe(0);
  });

  it('keeps its reducer and stream parser honest (pure modules, run in the browser)', async () => {
    // A string, not a function: the test transpiler would rewrite import() into require().
    const result = (await alice.evaluate(`(async () => {
      const { ConversationState } = await import('/console/state.js');
      const { SseParser } = await import('/console/sse.js');
      const s = new ConversationState('c1', { userId: 'alice', tenant: 'acme' });
      const ev = (id, event, data) => s.apply({ id, event, data });
      ev(1, 'task.started', { taskId: 't1', commandId: 'k1', attempt: 1, userId: 'alice', command: 'make', runnerId: 'r' });
      ev(2, 'task.backgrounded', { taskId: 't1', commandId: 'k1' });
      const backgrounded = { ...s.tasks.get('t1') };
      ev(3, 'task.finished', { taskId: 't1', commandId: 'k1', status: 'succeeded', exitCode: 0, signal: null });
      const replayedAgain = ev(2, 'task.backgrounded', { taskId: 't1', commandId: 'k1' });
      s.mergeTask({ taskId: 't1', status: 'running', attempt: 1 }); // a stale read never moves it back
      ev(4, 'command.output', { taskId: 't1', commandId: 'k1', offset: 0, bytes: 3, text: 'ab\\n' });
      ev(5, 'command.output', { taskId: 't1', commandId: 'k1', offset: 10, bytes: 2, text: 'z\\n' });
      const parsed = [];
      const p = new SseParser((e) => parsed.push(e));
      p.push(': connected\\r\\n\\r\\nid: 7\\r\\nevent: message.user\\r\\ndata: {"a":\\r\\ndata: 1}\\r\\n');
      p.push('\\r\\n: ping\\n\\nid: 8\\nevent: run.started\\ndata: {}\\n\\n');
      return { backgrounded, final: s.tasks.get('t1'), replayedAgain, output: s.outputs.get('t1').text, gaps: [...s.gaps], parsed };
    })()`)) as { backgrounded: object; final: object; replayedAgain: boolean; output: string; gaps: string[]; parsed: unknown[] };
    expect(result.backgrounded).toMatchObject({ status: 'running', background: true });
    expect(result.final).toMatchObject({ status: 'succeeded', background: true, exitCode: 0 });
    expect(result.replayedAgain).toBe(false);
    expect(result.output).toBe('ab\n');
    expect(result.gaps).toEqual(['t1']);
    expect(result.parsed).toEqual([
      { id: '7', event: 'message.user', data: '{"a":\n1}' },
      { id: '8', event: 'run.started', data: '{}' },
    ]);
  });
});
