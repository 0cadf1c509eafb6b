import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { decodeConversationEvent } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import { EventStore } from '@handplane/platform';
import { freshDatabase, NATS_URL, testNats, waitFor } from '@handplane/testing';
import { FakeCoordinator, type Behaviour } from './fake-coordinator';
import { ofType } from './runtime-harness';

const ROOT = join(__dirname, '..', '..', '..');

/**
 * The runtime as its own process (`main.ts`, configured from the environment), killed with SIGKILL
 * in the middle of a run and while a completion is on its way: another instance takes the run over
 * from its checkpoint once the lease expires, no tool call runs twice and no wake-up is lost.
 */
describe('agent runtime killed with SIGKILL (real NATS + Postgres)', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: Pool;
  let fake: FakeCoordinator;
  let store: EventStore;
  const children: ChildProcess[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const behaviour = (command: string): Behaviour => (command === 'hold' ? { kind: 'background', gate } : { kind: 'finish', exitCode: 0, output: `${command}\n` });

  beforeAll(async () => {
    env = await testNats('sigkill');
    db = await freshDatabase('sigkill');
    pool = new Pool({ connectionString: db.url });
    pool.on('error', () => undefined);
    fake = new FakeCoordinator(env.nats, env.topology, pool, behaviour);
    fake.start();
    store = new EventStore(env.nats);
  }, 60_000);
  afterAll(async () => {
    release();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await fake?.stop();
    await pool?.end();
    await env?.close();
    await db?.drop();
  }, 60_000);

  /** Starts `node main.ts` and resolves once it listens. */
  async function spawnRuntime(instance: string): Promise<ChildProcess> {
    const code = "require('./scripts/ts-register.js').register(); require('./services/agent-runtime/src/main.ts');";
    const childEnv = {
      ...process.env,
      NATS_URL,
      NATS_PREFIX: env.prefix,
      DATABASE_URL: db.url,
      RUNTIME_PORT: '0',
      FOREGROUND_WINDOW_MS: '2000',
      MODEL_PROVIDER: 'scripted',
      APPROVAL_POLICY: '',
      LOG_LEVEL: 'info',
      RUN_LEASE_MS: '1500',
      RUN_SWEEP_MS: '300',
      RUNTIME_INSTANCE_ID: instance,
    };
    const child = spawn(process.execPath, ['-e', code], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`runtime ${instance} exited: ${out}`);
      return out.includes('http listening');
    }, 60_000, `runtime ${instance} to start`, 100);
    return child;
  }

  async function kill(child: ChildProcess): Promise<void> {
    child.kill('SIGKILL');
    await waitFor(() => child.signalCode === 'SIGKILL', 10_000, 'the runtime to die', 50);
  }

  async function events(conv: string): Promise<(ConversationEvent & { seq: number })[]> {
    return (await store.read(env.topology.streams.CONV, env.topology.conv(conv), decodeConversationEvent)).events.map((e) => ({ ...e.event, seq: e.seq }));
  }
  const until = (conv: string, probe: (es: ConversationEvent[]) => boolean, what: string) =>
    waitFor(async () => {
      const es = await events(conv);
      return probe(es) ? es : undefined;
    }, 60_000, what, 100);

  it('resumes the killed run on another instance: no tool call runs twice, no wake-up is lost', async () => {
    const conv = 'conv-kill';
    await pool.query(`INSERT INTO conversations (id, tenant, created_by, created_at) VALUES ($1, 'acme', 'alice', now())`, [conv]);
    const a = await spawnRuntime('instance-a');
    await store.publish(env.topology.conv(conv), { type: 'message.user', data: { messageId: 'm1', userId: 'alice', text: '$ echo a\n$ hold\n$ echo b' }, metadata: { at: new Date().toISOString(), actor: 'alice' } }, 'msg:m1');

    // 1. Killed in the middle of exec(hold): the task is registered, the call has no result yet.
    await until(conv, (es) => ofType(es, 'tool.called').some((e) => (e.data.args as { command?: string }).command === 'hold'), 'instance A inside exec(hold)');
    await waitFor(() => fake.taskOf('hold') !== undefined, 10_000, 'the hold task to be registered');
    await kill(a);
    const atKill = await pool.query(`SELECT owner FROM run_leases WHERE conversation_id = $1`, [conv]);
    expect(atKill.rows).toEqual([{ owner: 'instance-a' }]);

    // 2. Instance B takes the run over once A's lease has expired, and suspends it on the wait.
    const b = await spawnRuntime('instance-b');
    release();
    let es = await until(conv, (x) => ofType(x, 'run.finished').length >= 1, 'the resumed run to suspend');
    expect(ofType(es, 'run.finished').map((e) => e.data.outcome)).toEqual(['waiting']);

    // 3. B is killed too; the task finishes while no runtime is alive.
    await waitFor(async () => (await pool.query(`SELECT 1 FROM run_leases WHERE conversation_id = $1`, [conv])).rowCount === 0, 10_000, 'B to release the lease');
    await kill(b);
    const hold = fake.taskOf('hold')!;
    await fake.finish(hold.taskId, 0, 'held\n');

    // 4. Instance C gets the completion from the durable consumer and finishes the plan.
    await spawnRuntime('instance-c');
    es = await until(conv, (x) => ofType(x, 'run.finished').length >= 2, 'the woken run to finish');

    const runs = ofType(es, 'run.started');
    expect(runs.map((e) => [e.data.trigger, e.data.userId])).toEqual([
      ['message', 'alice'],
      ['task_event', 'alice'],
    ]);
    expect(runs[1]!.data.taskId).toBe(hold.taskId);
    expect(ofType(es, 'run.finished').map((e) => e.data.outcome)).toEqual(['waiting', 'completed']);
    expect(ofType(es, 'assistant.message').pop()!.data.text).toBe('`echo a` → exit 0\n`hold` → exit 0\n`echo b` → exit 0');
    // Every command ran once on the host; every call was announced and answered once.
    expect([...fake.tasks.values()].map((t) => t.req.input.command)).toEqual(['echo a', 'hold', 'echo b']);
    // B redid the interrupted exec(hold) with the same request id: the host answered the task A had started.
    expect(fake.requests.filter((id) => id === hold.req.requestId)).toHaveLength(2);
    const called = ofType(es, 'tool.called').map((e) => e.data.callId);
    expect(new Set(called).size).toBe(called.length);
    expect(ofType(es, 'tool.result').map((e) => e.data.callId).sort()).toEqual([...called].sort());
    expect((await pool.query(`SELECT consumed_by_run FROM wakeups WHERE task_id = $1`, [hold.taskId])).rows).toEqual([{ consumed_by_run: runs[1]!.data.runId }]);
  });
});
