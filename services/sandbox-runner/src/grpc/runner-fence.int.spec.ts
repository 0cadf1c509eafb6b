import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { SignalKind, SignalOutcome } from '@handplane/proto';
import { testNats } from '@handplane/testing';
import { generateSchedule, simulate, type Action, type Answer } from '../app/fence-model.spec-helper';
import { codeOf, exec, execRequest, signal, startTestRunner, tempDataDir, waitExit, waitFor, type TestNats } from '../runner.spec-helper';

const INTERLEAVINGS = 200;
const CONCURRENT = 25;
const CONV = 'conv-fence';

type TestRunner = Awaited<ReturnType<typeof startTestRunner>>;

/**
 * Issue point 3 against real processes: the traces of the pure model (fence-model.spec-helper.ts) replayed on
 * the real runner, 25 interleavings at a time, with a real runner restart in each batch. Every
 * answer must be the model's, and every command must end the way the model says: a stop that
 * reached the wrong generation would show up as a command ended by 'stopped' that the model let
 * exit by itself (or the reverse).
 */
describe(`sandbox-runner fence: ${INTERLEAVINGS} seeded interleavings of exit, retry, delayed and duplicated stops and restarts against real processes`, () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  const ref: { t?: TestRunner } = {};

  beforeAll(async () => {
    env = await testNats('runfence');
    data = await tempDataDir();
    ref.t = await startTestRunner(env, data.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
  });
  afterAll(async () => {
    await ref.t?.stop();
    // Ends whatever a failed run left behind.
    const last = await startTestRunner(env, data.dir).catch(() => null);
    await last?.stop();
    await env?.close();
    await data?.remove();
  });

  const client = () => {
    if (!ref.t) throw new Error('no runner');
    return ref.t.client;
  };
  const ids = (seed: number, attempt: number) => ({ commandId: `f${seed}-a${attempt}`, taskId: `ft${seed}` });

  async function startAttempt(seed: number, attempt: number, epoch: number): Promise<void> {
    const { commandId, taskId } = ids(seed, attempt);
    // Waits on a FIFO in the workspace: the test decides when it exits by itself.
    const req = execRequest(`mkfifo go-${commandId} && read -r _ <> go-${commandId}`, { commandId, taskId, conversationId: CONV, generation: { epoch, attempt } });
    await exec(client(), req);
  }

  async function release(seed: number, attempt: number): Promise<void> {
    const { commandId } = ids(seed, attempt);
    const fifo = join(data.dir, 'workspaces', CONV, `go-${commandId}`);
    // Opening a FIFO for writing without blocking fails (ENOENT, ENXIO) until the command holds it open.
    const fh = await waitFor(() => open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => false as const), 20_000, `${commandId} waiting`, 10);
    await fh.write('go\n');
    await fh.close();
    await waitExit(client(), commandId);
  }

  async function send(seed: number, a: Extract<Action, { type: 'signal' }>): Promise<Answer> {
    const { commandId, taskId } = ids(seed, a.to);
    try {
      const r = await signal(client(), { commandId, taskId, generation: a.generation, kind: SignalKind.SIGNAL_KIND_STOP, graceMs: 5000 });
      if (r.outcome === SignalOutcome.SIGNAL_OUTCOME_DELIVERED) {
        await waitExit(client(), commandId);
        return 'delivered';
      }
      return 'already_exited';
    } catch (e) {
      const { code } = await codeOf(Promise.reject(e));
      if (code === grpcStatus.FAILED_PRECONDITION) return 'stale';
      throw e;
    }
  }

  async function restart(): Promise<void> {
    await ref.t?.stop();
    ref.t = await startTestRunner(env, data.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
  }

  it('answers every signal as the model does and misdirects none', async () => {
    const mismatches: string[] = [];
    let signals = 0;
    let restarts = 0;
    for (let first = 1; first <= INTERLEAVINGS; first += CONCURRENT) {
      const batch = Array.from({ length: CONCURRENT }, (_, i) => first + i).map((seed) => ({ seed, model: simulate(generateSchedule(seed), 'fenced') }));
      const longest = Math.max(...batch.map((b) => b.model.trace.length));
      let restarted = false;
      for (let step = 0; step < longest; step++) {
        await Promise.all(
          batch.map(async ({ seed, model }) => {
            const a = model.trace[step];
            if (!a || a.type === 'restart') return;
            if (a.type === 'exec') await startAttempt(seed, a.attempt, a.epoch);
            else if (a.type === 'exit') await release(seed, a.attempt);
            else {
              signals++;
              const got = await send(seed, a);
              if (got !== a.expect) mismatches.push(`seed ${seed} step ${step}: signal to attempt ${a.to} for ${JSON.stringify(a.generation)}: runner ${got}, model ${a.expect}`);
            }
          }),
        );
        // A restart is a no-op in the model (the runner persists what the fence needs): one real restart per batch.
        if (!restarted && batch.some((b) => b.model.trace[step]?.type === 'restart')) {
          await restart();
          restarted = true;
          restarts++;
        }
      }
      // The end of every attempt, as the runner recorded it, against the model.
      await Promise.all(
        batch.map(async ({ seed, model }) => {
          for (const [i, end] of model.ends.entries()) {
            const { commandId } = ids(seed, i + 1);
            if (end === 'running') await release(seed, i + 1);
            const { exit } = await waitExit(client(), commandId);
            const real = exit.reason === 'stopped' ? 'stopped' : exit.exitCode === 0 && exit.reason === '' ? 'self' : `other(${exit.reason}/${exit.signal})`;
            const want = end === 'running' ? 'self' : end;
            if (real !== want) mismatches.push(`seed ${seed} attempt ${i + 1}: ended ${real}, model ${want}`);
          }
        }),
      );
    }
    expect(mismatches).toEqual([]);
    expect(signals).toBeGreaterThan(INTERLEAVINGS);
    expect(restarts).toBeGreaterThan(0);
  });
});
