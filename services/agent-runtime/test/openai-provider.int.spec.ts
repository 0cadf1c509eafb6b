import { ValidationError } from '@handplane/kernel';
import { openAiProvider } from '../src/app/model/openai-provider';
import type { TranscriptEntry } from '../src/app/model/transcript';
import type { Behaviour } from './fake-coordinator';
import { FakeOpenAi, type Reply, type SeenRequest } from './openai-server';
import { ofType, startHarness, type Harness } from './runtime-harness';

const todo = (status: string) => [{ id: 'a', content: 'build the app', status }];

describe('OpenAI-compatible provider (a local server speaking the protocol)', () => {
  describe('the provider', () => {
    let server: FakeOpenAi;
    let base: string;
    const replies: Reply[] = [];
    beforeAll(async () => {
      server = new FakeOpenAi(() => replies.shift() ?? { text: 'nothing planned' });
      base = await server.start();
    });
    afterAll(() => server.stop());

    const transcript: TranscriptEntry[] = [
      { kind: 'user', messageId: 'm1', userId: 'alice', text: 'build it' },
      { kind: 'assistant', runId: 'r1', toolCalls: [{ callId: 'call_1', name: 'exec', args: { command: 'make' } }] },
      { kind: 'tool_result', callId: 'call_1', name: 'exec', ok: true, result: { taskId: 't1', commandId: 'c1', status: 'running_in_background' } },
      { kind: 'task_event', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', origin: 'agent', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 3 },
      { kind: 'guard', rule: 'G6', detail: 'unfinished todos' },
    ];

    it('streams parallel tool calls assembled from their deltas, with text', async () => {
      replies.push({ text: 'Reading it now.', toolCalls: [{ id: 'call_2', name: 'read_output', args: { taskId: 't1', offset: 0 } }, { id: 'call_3', name: 'write_todos', args: { todos: todo('in_progress'), wait_for_tasks: [] } }] });
      const r = await openAiProvider({ baseUrl: base, apiKey: 'sk-test', model: 'test-model', timeoutMs: 5000 }).next(transcript);
      expect(r).toEqual({
        text: 'Reading it now.',
        toolCalls: [
          { callId: 'call_2', name: 'read_output', args: { taskId: 't1', offset: 0 } },
          { callId: 'call_3', name: 'write_todos', args: { todos: todo('in_progress'), wait_for_tasks: [] } },
        ],
      });
      const req = server.requests[server.requests.length - 1]!;
      expect(req.headers.authorization).toBe('Bearer sk-test');
      expect(req.body).toMatchObject({ model: 'test-model', stream: true, parallel_tool_calls: true });
      expect(req.body.tools.map((t) => t.function.name)).toEqual(['exec', 'write_todos', 'read_output', 'stop_task', 'write_stdin', 'ask_user']);
      expect(req.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'user']);
      expect(req.body.messages[0]!.content).toMatch(/wait_for_tasks/);
      expect(req.body.messages[2]!.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'exec', arguments: '{"command":"make"}' } }]);
      expect(req.body.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: expect.stringContaining('running_in_background') });
      expect(req.body.messages[4]!.content).toMatch(/^\[task\] task t1 succeeded/);
      expect(req.body.messages[5]!.content).toBe('[runtime] G6: unfinished todos');
    });

    it('makes repeated or missing call ids unique', async () => {
      replies.push({ toolCalls: [{ id: 'call_1', name: 'exec', args: { command: 'ls' } }, { id: '', name: 'exec', args: { command: 'pwd' } }] });
      const r = await openAiProvider({ baseUrl: base, apiKey: '', model: 'm', timeoutMs: 5000 }).next(transcript);
      expect(r.toolCalls.map((c) => c.callId)).toEqual(['call_1-1', 'call-1-1']);
      expect(server.requests[server.requests.length - 1]!.headers.authorization).toBeUndefined();
    });

    it('retries a server error and fails at once on a refused request', async () => {
      replies.push({ status: 503, error: 'busy' }, { text: 'ok' });
      expect(await openAiProvider({ baseUrl: base, apiKey: 'k', model: 'm', timeoutMs: 5000 }).next(transcript)).toEqual({ toolCalls: [], text: 'ok' });
      replies.push({ status: 401, error: 'bad key' });
      await expect(openAiProvider({ baseUrl: base, apiKey: 'k', model: 'm', timeoutMs: 5000 }).next(transcript)).rejects.toThrow(ValidationError);
    });
  });

  describe('the runtime with MODEL_PROVIDER=openai (real NATS + Postgres)', () => {
    let h: Harness;
    let server: FakeOpenAi;
    const behaviour = (command: string): Behaviour => (command.startsWith('build') ? { kind: 'background' } : { kind: 'finish', exitCode: 0, output: `${command}\n` });
    const toolIds = (req: SeenRequest) => req.body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);

    beforeAll(async () => {
      // The server plays a model that plans, runs two commands in parallel, fakes a completion once, then waits.
      server = new FakeOpenAi((req) => {
        const last = req.body.messages[req.body.messages.length - 1]!;
        const tools = toolIds(req);
        if (last.role === 'user' && last.content?.startsWith('[alice]')) {
          return { toolCalls: [{ id: 'call_a', name: 'write_todos', args: { todos: todo('in_progress') } }, { id: 'call_b', name: 'exec', args: { command: 'echo ready' } }] };
        }
        if (tools.length === 2) return { toolCalls: [{ id: 'call_c', name: 'exec', args: { command: 'build app' } }] };
        if (tools.length === 3) return { text: 'Built!', toolCalls: [{ id: 'call_d', name: 'write_todos', args: { todos: todo('completed') } }] };
        const bg = req.body.messages.find((m) => m.tool_call_id === 'call_c')!.content!;
        const taskId = (JSON.parse(bg) as { result: { taskId: string } }).result.taskId;
        if (tools.length === 4) return { toolCalls: [{ id: 'call_e', name: 'write_todos', args: { todos: todo('in_progress'), wait_for_tasks: [taskId] } }] };
        return { text: 'Waiting for the build.' };
      });
      const base = await server.start();
      h = await startHarness('openai', behaviour, {}, { model: 'config', env: { MODEL_PROVIDER: 'openai' }, runtimeConfig: { OPENAI_BASE_URL: base, OPENAI_API_KEY: 'sk-test', MODEL_NAME: 'test-model' } });
    }, 60_000);
    afterAll(async () => {
      await h?.stop();
      await server?.stop();
    }, 60_000);

    it('runs parallel tool calls, answers each by its id, refuses the faked completion (G4) and suspends on the wait', async () => {
      const conv = await h.conversation('conv-openai');
      await h.say(conv, 'alice', 'build the app please');
      await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length > 0, 'the run to suspend');
      await h.settled();
      const es = await h.events(conv);
      expect(ofType(es, 'tool.called').map((e) => e.data.callId)).toEqual(['call_a', 'call_b', 'call_c', 'call_d', 'call_e']);
      expect(ofType(es, 'tool.result').map((e) => [e.data.callId, e.data.ok])).toEqual([
        ['call_a', true],
        ['call_b', true],
        ['call_c', true],
        ['call_d', false],
        ['call_e', true],
      ]);
      expect(ofType(es, 'guard.rejected').map((e) => e.data.rule)).toEqual(['G4']);
      const build = h.fake.taskOf('build app')!;
      expect(ofType(es, 'wait.declared').map((e) => e.data.taskIds)).toEqual([[build.taskId]]);
      expect(ofType(es, 'run.finished').map((e) => e.data.outcome)).toEqual(['waiting']);
      expect(ofType(es, 'assistant.message').map((e) => e.data.text)).toEqual(['Built!', 'Waiting for the build.']);
      // Every later request answered every earlier call by its id.
      expect(toolIds(server.requests[server.requests.length - 1]!)).toEqual(['call_a', 'call_b', 'call_c', 'call_d', 'call_e']);
      expect(server.requests.every((r) => r.body.model === 'test-model' && r.headers.authorization === 'Bearer sk-test')).toBe(true);
    });
  });
});
