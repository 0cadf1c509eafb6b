import { decodeConversationEvent } from '@handplane/contracts';
import type { TaskAwaitingInput } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { ingestorEnv, quietLogger, uid } from './harness';
import { RunnerDouble } from './runner-double';

/** `task.awaiting_input`: a running command whose output ends with a prompt and then stays quiet. */
describe('log-ingestor: interactive prompt detection (real NATS + Postgres, runner double)', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;

  beforeAll(async () => {
    h = await ingestorEnv('prompt');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-p');
    ingestor = await startIngestor(h.config(), { logger: quietLogger(), instanceId: 'prompt-a', promptQuietMs: 300 });
  });
  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  const prompts = async (conversationId: string): Promise<TaskAwaitingInput['data'][]> => {
    const r = await h.store.read(h.t.streams.CONV, h.t.conv(conversationId), decodeConversationEvent);
    return r.events.flatMap((e) => (e.event.type === 'task.awaiting_input' ? [e.event.data] : []));
  };

  it('reports each prompt once, after the quiet period; output that ends in a newline or keeps coming is no prompt', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-p' });
    cmd.write(Buffer.from('installing\n'));
    await waitFor(async () => ((await h.cursor(ids.commandId))?.committed_offset ?? 0) >= 11, 15_000, 'first line stored');
    cmd.write(Buffer.from('Continue? [y/N] '));
    const first = await waitFor(async () => {
      const p = await prompts(ids.conversationId);
      return p.length > 0 ? p : undefined;
    }, 15_000, 'task.awaiting_input');
    expect(first).toEqual([{ taskId: ids.taskId, commandId: ids.commandId, attempt: 1, offset: 27, prompt: 'Continue? [y/N]' }]);

    // The answer's echo and plain progress: no new prompt; then a password prompt: reported.
    cmd.write(Buffer.from('y\nworking 10%\n'));
    cmd.write(Buffer.from('[sudo] password for alice: '));
    await waitFor(async () => ((await prompts(ids.conversationId)).length === 2 ? true : undefined), 15_000, 'second prompt');
    cmd.write(Buffer.from('\ndone\n'));
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');
    const all = await prompts(ids.conversationId);
    expect(all.map((p) => [p.offset, p.prompt])).toEqual([
      [27, 'Continue? [y/N]'],
      [27 + 14 + 27, '[sudo] password for alice:'],
    ]);
  });

  it('reports nothing for a command whose output ends with a newline, however long it is quiet', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-p' });
    cmd.write(Buffer.from('Continue? [y/N]\n'));
    await waitFor(async () => ((await h.cursor(ids.commandId))?.committed_offset ?? 0) >= 16, 15_000, 'stored');
    await new Promise((r) => setTimeout(r, 1200));
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');
    expect(await prompts(ids.conversationId)).toEqual([]);
  });
});
