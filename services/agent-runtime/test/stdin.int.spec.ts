import { writeStdinRequestSchema, type WriteStdinRequest } from '@handplane/contracts';
import { createLogger, serveRpc } from '@handplane/platform';
import type { Subscription } from '@nats-io/transport-node';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

/**
 * `write_stdin` through the scripted model: a command blocked on a `[y/N]` prompt goes to the
 * background; the model answers it from its `< y` line, waits, and the command completes. The
 * coordinator's `write-stdin` is played here on the real RPC subject: it finishes the task once the
 * answer arrives, as the real command would.
 */
describe('agent runtime: write_stdin (real NATS + Postgres)', () => {
  let h: Harness;
  let sub: Subscription;
  const writes: WriteStdinRequest[] = [];
  const behaviour = (command: string): Behaviour => (command.startsWith('printf') || command.startsWith('sleep') ? { kind: 'background' } : { kind: 'finish', exitCode: 0, output: 'ok\n' });

  beforeAll(async () => {
    h = await startHarness('rtstdin', behaviour, {
      governance: [
        () => ({ toolCalls: [{ callId: 'call-1', name: 'exec', args: { command: 'sleep 300' } }] }),
        (since) => {
          const started = since.find((e) => e.kind === 'tool_result') as { result: { taskId: string } };
          return {
            toolCalls: [
              { callId: 'call-2', name: 'write_stdin', args: { taskId: started.result.taskId, attempt: 7, data: 'y\n' } },
              { callId: 'call-3', name: 'write_stdin', args: { taskId: 'tnotmine', attempt: 1, data: 'y\n' } },
              { callId: 'call-4', name: 'write_stdin', args: { taskId: started.result.taskId, attempt: 1 } },
            ],
          };
        },
      ],
    });
    sub = serveRpc(h.env.nats.nc, h.env.topology.rpc.writeStdin, 'coordinator', writeStdinRequestSchema, async (req) => {
      writes.push(req);
      const task = h.fake.tasks.get(req.taskId);
      if (!task || task.req.tenant !== req.tenant || task.req.conversationId !== req.conversationId) return { ok: false, error: { code: 'not_found', message: 'unknown task' } };
      const text = Buffer.from(req.data, 'base64').toString('utf8');
      // The command reads its answer and ends.
      setTimeout(() => void h.fake.finish(req.taskId, 0, `Continue? [y/N] got ${text}`), 50);
      return { ok: true, taskId: req.taskId, attempt: 1, bytes: Buffer.byteLength(text), closed: req.close ?? false, totalBytes: Buffer.byteLength(text) };
    }, createLogger('fake-stdin', 'warn'));
  }, 60_000);
  afterAll(async () => {
    sub?.unsubscribe();
    await h?.stop();
  }, 60_000);

  const finishedRuns = (n: number) => (es: Parameters<typeof ofType>[0]) => ofType(es, 'run.finished').length >= n;

  it('answers a [y/N] prompt with write_stdin: the task completes, wakes the run once, and the summary says exit 0', async () => {
    const conv = await h.conversation('conv-yn');
    const command = `printf 'Continue? [y/N] '; read a; echo "got $a"`;
    await h.say(conv, 'alice', `$ ${command}\n< y`);
    const es = await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').some((e) => e.data.outcome === 'completed'), 'the woken run to complete', 30_000);
    const task = h.fake.taskOf(command)!;
    const calls = ofType(es, 'tool.called').filter((e) => e.data.name === 'write_stdin');
    expect(calls.map((e) => e.data.args)).toEqual([{ taskId: task.taskId, attempt: 1, data: 'y\n' }]);
    const result = ofType(es, 'tool.result').find((e) => e.data.name === 'write_stdin')!;
    expect(result.data).toMatchObject({ ok: true, result: { taskId: task.taskId, attempt: 1, bytes: 2, closed: false } });
    expect(writes.filter((w) => w.taskId === task.taskId)).toEqual([
      { tenant: 'acme', userId: 'alice', taskId: task.taskId, attempt: 1, conversationId: conv, data: Buffer.from('y\n').toString('base64'), close: false, via: 'agent' },
    ]);
    // The command finished only because of the answer: the model then read its output, once.
    expect(ofType(es, 'tool.called').filter((e) => e.data.name === 'read_output')).toHaveLength(1);
    expect(ofType(es, 'run.started').filter((e) => e.data.trigger === 'task_event').length).toBeLessThanOrEqual(1);
    expect(ofType(es, 'assistant.message').pop()!.data.text).toBe(`\`${command}\` → exit 0`);
  });

  it('refuses input for another attempt, for another conversation and with nothing to write; nothing reaches the coordinator', async () => {
    const conv = await h.conversation('conv-gov');
    const before = writes.length;
    await h.say(conv, 'alice', 'test:governance');
    const es = await h.waitForEvents(conv, finishedRuns(1), 'the run to finish');
    const task = h.fake.taskOf('sleep 300')!;
    const results = ofType(es, 'tool.result').filter((e) => e.data.name === 'write_stdin');
    expect(results.map((e) => [e.data.ok, (e.data.result as { error: { code: string; message: string } }).error.code])).toEqual([
      [false, 'validation'],
      [false, 'not_found'],
      [false, 'validation'],
    ]);
    expect((results[0]!.data.result as { error: { message: string } }).error.message).toBe(`attempt 7 is not the current attempt of task ${task.taskId} (1); nothing was written`);
    expect(writes.length).toBe(before);
  });
});
