import { createHash } from 'node:crypto';
import { waitFor } from '@handplane/testing';
import { startCliStack } from './cli-stack';
import { Api } from './client';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const PROMPT_CMD = `printf 'Continue? [y/N] '; read answer; echo "got <$answer>"`;

/**
 * Input to a running command (issue 10 part 2) through the public API, the CLI and the scripted
 * model, against every service in-process on the real NATS and Postgres and a real runner: the
 * prompt shows up as `task.awaiting_input`, the answer goes through `POST /v1/tasks/:id/stdin`
 * (fenced, audited by size and digest) and the command completes.
 */
describe('stdin of a running command (real NATS + Postgres + every service)', () => {
  let stack: Awaited<ReturnType<typeof startCliStack>>;
  let alice: Api;
  let bob: Api;
  let mallory: Api;
  let tokens: Record<string, string>;
  let conv: string;

  beforeAll(async () => {
    stack = await startCliStack('stdin', { FOREGROUND_WINDOW_MS: '1500' });
    const token = async (user: string, tenant: string) => (await stack.cli(['token', user, tenant], { env: { JWT_SECRET: 'cli-test-secret' } })).stdout.toString().trim();
    tokens = { alice: await token('alice', 'acme'), bob: await token('bob', 'acme'), mallory: await token('mallory', 'evil') };
    alice = new Api(stack.baseUrl, tokens.alice!);
    bob = new Api(stack.baseUrl, tokens.bob!);
    mallory = new Api(stack.baseUrl, tokens.mallory!);
    const created = await alice.call('POST', '/v1/conversations', { title: 'stdin' });
    expect(created.status).toBe(201);
    conv = created.json.id;
  }, 120_000);
  afterAll(() => stack?.stop(), 60_000);

  const task = async (taskId: string) => (await alice.call('GET', `/v1/tasks/${taskId}`)).json;
  const finished = (taskId: string) =>
    waitFor(async () => {
      const t = await task(taskId);
      return t.resultState === 'readable' && !['starting', 'running', 'stopping'].includes(t.status) ? t : undefined;
    }, 30_000, `task ${taskId} finished and readable`);
  const stdin = (api: Api, taskId: string, body: unknown) => api.call('POST', `/v1/tasks/${taskId}/stdin`, body);

  it('a person answers a [y/N] prompt: the prompt shows up as task.awaiting_input, the answer is fenced and audited, the command completes', async () => {
    const sse = alice.events(conv);
    try {
      const started = await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: PROMPT_CMD });
      expect(started.status).toBe(201);
      const { taskId } = started.json;
      const prompt = await waitFor(async () => sse.events.find((e) => e.event === 'task.awaiting_input' && e.data.taskId === taskId), 30_000, 'task.awaiting_input');
      expect(prompt.data).toMatchObject({ taskId, attempt: 1, offset: 'Continue? [y/N] '.length, prompt: 'Continue? [y/N]' });
      expect((await task(taskId)).status).toBe('running');

      // Nobody outside the conversation may type into it; a stale attempt is refused; nothing reaches the command.
      expect((await stdin(bob, taskId, { data: 'n\n' })).status).toBe(404);
      expect((await stdin(mallory, taskId, { data: 'n\n' })).status).toBe(404);
      const stale = await stdin(alice, taskId, { data: 'n\n', attempt: 2 });
      expect([stale.status, stale.json.error.code]).toEqual([409, 'conflict']);

      const answered = await stdin(alice, taskId, { data: 'y\n', attempt: 1 });
      expect([answered.status, answered.json]).toEqual([202, { taskId, attempt: 1, bytes: 2, closed: false, totalBytes: 2 }]);
      const done = await finished(taskId);
      expect([done.status, done.exitCode]).toEqual(['succeeded', 0]);
      expect((await alice.output(taskId)).bytes.toString()).toBe('Continue? [y/N] got <y>\n');

      const late = await stdin(alice, taskId, { data: 'again\n' });
      expect([late.status, late.json.error.code]).toEqual([409, 'illegal_state']);
      const written = await waitFor(async () => sse.events.find((e) => e.event === 'task.stdin' && e.data.taskId === taskId), 15_000, 'task.stdin on SSE');
      expect(written.data).toEqual({ taskId, commandId: expect.any(String), attempt: 1, by: 'alice', via: 'user', bytes: 2, sha256: sha('y\n'), closed: false });
      // One prompt, one notice; the audit has the write by size and digest only.
      expect(sse.events.filter((e) => e.event === 'task.awaiting_input' && e.data.taskId === taskId)).toHaveLength(1);
      const audit = await alice.call('GET', `/v1/conversations/${conv}/audit`);
      const entries = (Array.isArray(audit.json) ? audit.json : audit.json.entries) as { type: string; actor: string; data: Record<string, unknown> }[];
      const entry = entries.find((e) => e.type === 'task.stdin' && e.data.taskId === taskId)!;
      expect(entry).toMatchObject({ actor: 'alice', data: { bytes: 2, sha256: sha('y\n') } });
      expect(Object.keys(entry.data)).not.toContain('data');
    } finally {
      sse.close();
    }
  });

  it('the CLI pipes bytes into a command and closes its stdin: cat sees end-of-file', async () => {
    const started = await alice.call('POST', `/v1/conversations/${conv}/commands`, { command: 'echo ready; cat | sha256sum' });
    const { taskId } = started.json;
    await waitFor(async () => ((await task(taskId)).status === 'running' ? true : undefined), 20_000, 'running');
    const input = 'line one\nline two without newline';
    const r = await stack.cli(['--json', 'tasks', 'stdin', '--close', taskId, '-'], { env: { HANDPLANE_TOKEN: tokens.alice! }, stdin: input });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(r.stdout.toString())).toMatchObject({ taskId, bytes: input.length, closed: true, totalBytes: input.length });
    await finished(taskId);
    expect((await alice.output(taskId)).bytes.toString()).toBe(`ready\n${sha(input)}  -\n`);
    const refused = await stack.cli(['tasks', 'stdin', taskId, 'more'], { env: { HANDPLANE_TOKEN: tokens.alice! } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/409/);
  });

  it('the scripted model answers the prompt with write_stdin (its `< y` line) and the command completes', async () => {
    const own = await alice.call('POST', '/v1/conversations', { title: 'agent stdin' });
    const id = own.json.id;
    const sse = alice.events(id);
    try {
      const command = `printf 'Proceed? [y/N] '; read a; echo "answer=$a"`;
      expect((await alice.call('POST', `/v1/conversations/${id}/messages`, { text: `$ ${command}\n< y` })).status).toBe(202);
      const summary = await waitFor(async () => sse.events.find((e) => e.event === 'assistant.message' && String(e.data.text).includes('→')), 60_000, 'the summary');
      expect(summary.data.text).toBe(`\`${command}\` → exit 0`);
      const calls = sse.events.filter((e) => e.event === 'tool.called' && e.data.name === 'write_stdin');
      expect(calls.map((e) => e.data.args)).toEqual([{ taskId: expect.any(String), attempt: 1, data: 'y\n' }]);
      const taskId = (calls[0]!.data.args as { taskId: string }).taskId;
      expect((await alice.output(taskId)).bytes.toString()).toBe('Proceed? [y/N] answer=y\n');
      const written = sse.events.find((e) => e.event === 'task.stdin' && e.data.taskId === taskId);
      expect(written?.data).toMatchObject({ by: 'alice', via: 'agent', bytes: 2, sha256: sha('y\n') });
    } finally {
      sse.close();
    }
  });
});
