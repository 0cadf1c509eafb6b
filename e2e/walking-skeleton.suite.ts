import { createHash } from 'node:crypto';
import { waitFor } from '@handplane/testing';
import { Api, type SseEvent } from './client';
import { startStack, type Stack } from './stack';

/**
 * The walking skeleton, end to end, on the real stack started as a user starts it
 * (`scripts/up.mjs` with the built services, the machine's NATS and Postgres). With `replicas`,
 * every control-plane service runs that many times and each request goes to the next gateway.
 */
export function walkingSkeleton(title: string, opts: { replicas: number; more?: (ctx: () => { stack: Stack; alice: Api }) => void }): void {
  describe(title, () => {
    let stack: Stack;
    let alice: Api;
    let mallory: Api;

    beforeAll(async () => {
      stack = await startStack({ FOREGROUND_WINDOW_MS: '2000', SSE_HEARTBEAT_MS: '1000' }, { replicas: opts.replicas });
      alice = new Api(stack.baseUrls, await stack.token('alice', 'acme'));
      mallory = new Api(stack.baseUrls, await stack.token('mallory', 'evil'));
    }, 180_000);
    afterAll(async () => {
      await stack?.stop();
    }, 60_000);

    async function newConversation(title: string): Promise<string> {
      const r = await alice.call('POST', '/v1/conversations', { title });
      expect(r.status).toBe(201);
      return r.json.id;
    }

    async function finishedTask(taskId: string, timeoutMs = 60_000) {
      return waitFor(
        async () => {
          const t = await alice.call('GET', `/v1/tasks/${taskId}`);
          return t.status === 200 && ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].includes(t.json.status) && t.json.resultState !== 'result_pending' ? t.json : undefined;
        },
        timeoutMs,
        `task ${taskId} to finish`,
        100,
      );
    }

    it('answers bad input with the right status and a JSON error', async () => {
      const id = await newConversation('errors');
      const noToken = await fetch(`${stack.baseUrl}/v1/conversations/${id}`);
      expect(noToken.status).toBe(401);
      expect((await noToken.json()).error.code).toBeDefined();
      const forged = new Api(stack.baseUrl, 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwidGVuYW50IjoiYWNtZSJ9.AAAA');
      expect((await forged.call('GET', `/v1/conversations/${id}`)).status).toBe(401);
      expect((await alice.call('GET', '/v1/conversations/does-not-exist')).status).toBe(404);
      expect((await mallory.call('GET', `/v1/conversations/${id}`)).status).toBe(404);
      const malformed = await alice.call('POST', `/v1/conversations/${id}/commands`, '{"command": ');
      expect(malformed.status).toBe(400);
      expect(malformed.json.error.message).toEqual(expect.any(String));
      expect((await alice.call('POST', `/v1/conversations/${id}/commands`, { command: '   ' })).status).toBe(422);
      expect((await alice.call('POST', `/v1/conversations/${id}/commands`, { command: 42 })).status).toBe(422);
      expect((await alice.call('GET', `/v1/conversations/${id}/tasks`)).json).toEqual([]);
    });

    it('returns the output of seq 1 100000 plus invalid UTF-8 and NUL byte-exact, and streams the task events', async () => {
      const id = await newConversation('bytes');
      const sse = alice.events(id);
      const r = await alice.call('POST', `/v1/conversations/${id}/commands`, { command: "seq 1 100000; printf '\\377\\376\\000\\001bin\\n'" });
      expect(r.status).toBe(201);
      const { taskId, commandId } = r.json;
      const task = await finishedTask(taskId);
      expect(task).toMatchObject({ taskId, commandId, conversationId: id, userId: 'alice', status: 'succeeded', exitCode: 0, resultState: 'readable' });

      const lines = Array.from({ length: 100000 }, (_, i) => `${i + 1}\n`).join('');
      const expected = Buffer.concat([Buffer.from(lines), Buffer.from([0xff, 0xfe, 0x00, 0x01]), Buffer.from('bin\n')]);
      const out = await alice.output(taskId);
      expect(out.bytes.length).toBe(expected.length);
      expect(createHash('sha256').update(out.bytes).digest('hex')).toBe(createHash('sha256').update(expected).digest('hex'));
      expect(out.headers.get('x-output-complete')).toBe('true');
      expect(task.outputBytes).toBe(expected.length);
      // Serving a person's own command to its last byte hands the result over (CommandResultDelivered).
      await waitFor(async () => ((await alice.call('GET', `/v1/tasks/${taskId}`)).json.resultState === 'delivered' ? true : undefined), 15_000, 'the result to be delivered');

      // From a middle offset: exactly the tail.
      const mid = await fetch(`${stack.baseUrl}/v1/tasks/${taskId}/output?offset=${expected.length - 9}`, { headers: { authorization: `Bearer ${await stack.token('alice', 'acme')}` } });
      expect(Buffer.from(await mid.arrayBuffer()).equals(expected.subarray(expected.length - 9))).toBe(true);
      expect((await mallory.call('GET', `/v1/tasks/${taskId}/output?offset=0`)).status).toBe(404);

      const mine = (e: SseEvent) => e.data.taskId === taskId;
      await waitFor(() => sse.events.some((e) => e.event === 'task.result' && mine(e)), 20_000, 'task.result on SSE');
      sse.close();
      const types = sse.events.filter(mine).map((e) => e.event);
      expect(types).toEqual(expect.arrayContaining(['task.started', 'command.output', 'task.finished', 'task.result']));
      expect(types.indexOf('task.started')).toBeLessThan(types.indexOf('task.finished'));
      expect(types.indexOf('task.finished')).toBeLessThan(types.indexOf('task.result'));
      const ids = sse.events.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('backgrounds a command that outlives the foreground window and later settles it with its full output', async () => {
      const id = await newConversation('long');
      const sse = alice.events(id);
      const r = await alice.call('POST', `/v1/conversations/${id}/commands`, { command: 'echo begin; sleep 4; echo finished-late' });
      expect(r.status).toBe(201);
      const { taskId } = r.json;
      await waitFor(() => sse.events.some((e) => e.event === 'task.backgrounded' && e.data.taskId === taskId), 15_000, 'task.backgrounded');
      // The read model behind GET follows the log a moment after the event that reached SSE.
      const during = await waitFor(
        async () => {
          const t = await alice.call('GET', `/v1/tasks/${taskId}`);
          return t.json.background ? t : undefined;
        },
        10_000,
        'the task read model to show it backgrounded',
        50,
      );
      expect(during.json).toMatchObject({ status: 'running', background: true });
      const task = await finishedTask(taskId);
      expect(task).toMatchObject({ status: 'succeeded', background: true, exitCode: 0, resultState: 'readable' });
      expect((await alice.output(taskId)).bytes.toString()).toBe('begin\nfinished-late\n');
      await waitFor(() => sse.events.some((e) => e.event === 'task.finished' && e.data.taskId === taskId), 10_000, 'task.finished on SSE');
      sse.close();
    });

    it('runs a two-command scripted conversation: waits on the background task, wakes exactly once as the originating user, completes', async () => {
      const id = await newConversation('scripted');
      expect((await alice.call('POST', `/v1/conversations/${id}/members`, { userId: 'bob' })).status).toBe(204);
      const sse = alice.events(id);
      const posted = await alice.call('POST', `/v1/conversations/${id}/messages`, { text: '$ echo first\n$ sleep 9; echo second' });
      expect(posted.status).toBe(202);
      expect(posted.json.disposition).toBe('started');

      await waitFor(() => sse.events.some((e) => e.event === 'run.finished' && e.data.outcome === 'waiting'), 30_000, 'the run to wait');
      expect(sse.events.some((e) => e.event === 'wait.declared')).toBe(true);
      // The read model follows the log: wait for it to show the suspended run (the task sleeps 9 s, so
      // the run cannot have been woken yet).
      const waiting = await waitFor(
        async () => {
          const c = await alice.call('GET', `/v1/conversations/${id}`);
          return c.json.run.status === 'waiting' ? c : undefined;
        },
        5_000,
        'the conversation to show the waiting run',
      );
      expect(waiting.json.waitForTasks).toHaveLength(1);

      await waitFor(() => sse.events.some((e) => e.event === 'run.finished' && e.data.outcome === 'completed'), 60_000, 'the woken run to complete');
      // Give a duplicate wake-up time to show itself: there must be none.
      await new Promise((r) => setTimeout(r, 2500));
      sse.close();
      const woken = sse.events.filter((e) => e.event === 'run.started' && e.data.trigger === 'task_event');
      expect(woken).toHaveLength(1);
      expect(woken[0]!.data.userId).toBe('alice');
      // One internal task event per finished task (two tasks), but only the backgrounded one wakes a run.
      const internal = sse.events.filter((e) => e.event === 'task.internal_event');
      expect(internal.map((e) => e.data.taskId).sort()).toEqual(((await alice.call('GET', `/v1/conversations/${id}/tasks`)).json as { taskId: string }[]).map((t) => t.taskId).sort());
      expect(woken[0]!.data.taskId).toBe(waiting.json.waitForTasks[0]);

      const final = await alice.call('GET', `/v1/conversations/${id}`);
      expect(final.json.run.status).toBe('idle');
      expect(final.json.todos.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed']);
      const summary = sse.events.filter((e) => e.event === 'assistant.message').pop();
      expect(String(summary?.data.text)).toMatch(/exit 0/);
      const tasks = await alice.call('GET', `/v1/conversations/${id}/tasks`);
      expect(tasks.json.map((t: { status: string }) => t.status)).toEqual(['succeeded', 'succeeded']);
      // The agent was handed both results (exec in the foreground, read_output after the wake-up).
      await waitFor(
        async () => {
          const states = ((await alice.call('GET', `/v1/conversations/${id}/tasks`)).json as { resultState: string }[]).map((t) => t.resultState);
          return states.every((s) => s === 'delivered') ? states : undefined;
        },
        15_000,
        'both results delivered to the agent',
      );
    });
    // More cases of the caller's, run on the same stack after these.
    opts.more?.(() => ({ stack, alice }));
  });
}
