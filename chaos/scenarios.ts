/**
 * The catalogue of faults. Each scenario puts load on the stack, injects its fault at a random
 * moment, heals it, and measures the recovery time (first successful command round trip after the
 * heal). What the load ended as is judged once at the end (figures.ts).
 */
import { headers as natsHeaders } from '@nats-io/transport-node';
import { topology } from '@handplane/contracts';
import type { Nats, RunnerRegistry } from '@handplane/platform';
import type { Pool } from 'pg';
import type { World } from './harness';
import { sleep } from './infra';
import type { DroppingSse } from './sse';
import { durationMs, generatorCommand, launch, roundTrip, type Client, type Generator, type Launched } from './workload';

export interface Mode {
  readonly short: boolean;
  /** SIGKILL rounds per service. */
  readonly killRounds: number;
  readonly natsDownMs: number;
  readonly pgDownMs: number;
  /** Runner SIGSTOP: past the coordinator's dispatch consumer ack wait (10 s). */
  readonly pauseMs: number;
  readonly cutMs: number;
  readonly sseDropEveryMs: number;
  /** Generators started per scenario. */
  readonly load: number;
  /** How long after its command's end (or the heal) a task may take to be terminal. */
  readonly settleMs: number;
}

export interface FaultResult {
  readonly name: string;
  ran: boolean;
  recoveryMs: number[];
  notes: string[];
}

/** Agent conversations: a `$ <generator>` message whose task goes to the background and wakes the agent. */
export interface AgentCase {
  readonly conversationId: string;
  readonly gen: Generator;
  readonly client: Client;
  readonly scenario: string;
}

export interface Ctx {
  readonly world: World;
  readonly mode: Mode;
  readonly nats: Nats;
  readonly registry: RunnerRegistry;
  readonly pool: Pool;
  readonly alice: Client;
  readonly mallory: Client;
  readonly mainConv: string;
  readonly probeConv: string;
  readonly malloryConv: string;
  readonly launched: Launched[];
  readonly agentCases: AgentCase[];
  readonly faults: FaultResult[];
  /** Stops that hit something other than their target, or foreign/stale stops that were accepted. */
  readonly misdirected: string[];
  /** Foreign-tenant reads that answered anything but 404. */
  readonly crossTenant: string[];
  readonly sse: DroppingSse[];
  readonly log: (s: string) => void;
}

const rand = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

function fault(ctx: Ctx, name: string): FaultResult {
  const f: FaultResult = { name, ran: false, recoveryMs: [], notes: [] };
  ctx.faults.push(f);
  ctx.log(`fault: ${name}`);
  return f;
}

/** `n` generators of about `ms` each in the main conversation (one of them exits 3, to be `failed`). */
async function load(ctx: Ctx, scenario: string, n: number, ms: number): Promise<Launched[]> {
  const out: Launched[] = [];
  for (let i = 0; i < n; i++) {
    const perTick = 20 + 40 * (i % 3);
    const intervalMs = 100;
    const lines = Math.max(perTick, Math.round((ms / intervalMs) * perTick));
    const t = await launch(ctx.alice, ctx.mainConv, scenario, { lines, perTick, intervalMs, exitCode: i === 1 ? 3 : 0 });
    ctx.launched.push(t);
    out.push(t);
  }
  return out;
}

/** An agent conversation whose one command outlives the foreground window: one wake-up expected. */
async function agentCase(ctx: Ctx, scenario: string, ms: number): Promise<void> {
  const conv = await ctx.alice.conversation(`agent-${scenario}-${ctx.agentCases.length}-${process.pid}`);
  const gen: Generator = { tag: `agent-${process.pid}-${ctx.agentCases.length}`, lines: Math.round(ms / 100) * 10, perTick: 10, intervalMs: 100, exitCode: 0 };
  const r = await ctx.alice.reliably('POST', `/v1/conversations/${conv}/messages`, { text: `$ ${generatorCommand(gen)}` }, `msg:${gen.tag}`);
  if (r.status !== 202) throw new Error(`agent message refused: ${r.status} ${JSON.stringify(r.json)}`);
  ctx.agentCases.push({ conversationId: conv, gen, client: ctx.alice, scenario });
  // The fault must hit a running background task and its wake-up, not the agent's first exec.
  const end = Date.now() + 90_000;
  while (Date.now() < end) {
    const t = await ctx.alice.call('GET', `/v1/conversations/${conv}/tasks`).catch(() => null);
    const list = (Array.isArray(t?.json) ? t!.json : (t?.json?.tasks ?? [])) as unknown[];
    if (list.length > 0) return;
    await sleep(300);
  }
  ctx.log(`agent case ${gen.tag}: the agent started no task within 90 s`);
}

async function recover(ctx: Ctx, f: FaultResult, since: number): Promise<void> {
  try {
    f.recoveryMs.push(await roundTrip(ctx.alice, ctx.probeConv, since, 180_000));
  } catch (e) {
    f.notes.push((e as Error).message);
  }
}

async function runnerOf(ctx: Ctx, ts: Launched[]): Promise<Map<string, string | null>> {
  const r = await ctx.pool.query<{ task_id: string; runner_id: string | null }>('SELECT task_id, runner_id FROM tasks WHERE task_id = ANY($1)', [ts.map((t) => t.taskId)]);
  return new Map(r.rows.map((x) => [x.task_id, x.runner_id]));
}

async function waitStarted(ctx: Ctx, ts: Launched[], timeoutMs = 30_000): Promise<Map<string, string | null>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const m = await runnerOf(ctx, ts);
    if ([...m.values()].filter(Boolean).length === ts.length || Date.now() > end) return m;
    await sleep(200);
  }
}

/** SIGKILL of each service at a random moment during load, restarted at once. */
export async function killEachService(ctx: Ctx): Promise<void> {
  const names = ['gateway', 'agent-runtime', 'task-coordinator', 'log-ingestor', 'runner-a'];
  for (let round = 0; round < ctx.mode.killRounds; round++) {
    for (const name of names) {
      const f = ctx.faults.find((x) => x.name === `SIGKILL ${name}`) ?? fault(ctx, `SIGKILL ${name}`);
      const svc = ctx.world.services.get(name)!;
      await load(ctx, `kill-${name}`, ctx.mode.load, 5000);
      // Wake-ups under the faults that can break them (the short mode spares the machine the rest).
      if (!ctx.mode.short || name === 'agent-runtime' || name === 'task-coordinator') await agentCase(ctx, `kill-${name}`, 6000);
      await sleep(rand(300, 3000));
      await svc.kill();
      svc.start();
      const since = Date.now();
      f.ran = true;
      await svc.ready(90_000).catch((e) => f.notes.push((e as Error).message));
      await recover(ctx, f, since);
    }
  }
}

/** nats-server SIGKILLed mid-run and started again on the same store; a stop is sent right after the restart. */
export async function restartNats(ctx: Ctx): Promise<void> {
  const f = fault(ctx, 'NATS restart (SIGKILL)');
  await load(ctx, 'nats', ctx.mode.load, 6000);
  // Long enough to be surely running when the stop arrives, however slow the recovery.
  const [x, y] = await load(ctx, 'nats-stop', 2, 45_000);
  await sleep(rand(500, 2500));
  await ctx.world.nats.kill();
  await sleep(ctx.mode.natsDownMs);
  await ctx.world.nats.start();
  const since = Date.now();
  f.ran = true;
  await stopOne(ctx, f, x!, y!);
  await recover(ctx, f, since);
}

/** Stops `x` (its generation) while `y` runs in the same conversation: `y` must not be touched. */
async function stopOne(ctx: Ctx, f: FaultResult, x: Launched, y: Launched): Promise<void> {
  const v = await ctx.alice.reliably('GET', `/v1/tasks/${x.taskId}`, undefined, `get:${x.taskId}`, 60_000);
  const r = await ctx.alice.reliably('POST', `/v1/tasks/${x.taskId}/stop`, { attempt: v.json.attempt }, `stop:${x.taskId}`, 60_000);
  if (r.status === 202) x.stopped = true;
  else f.notes.push(`stop of ${x.taskId} answered ${r.status} ${JSON.stringify(r.json)}`);
  y.mustNotStop = true;
}

/** Postgres stopped with `-m immediate` (every backend killed, WAL replay) and started again. */
export async function restartPostgres(ctx: Ctx): Promise<void> {
  const f = fault(ctx, 'Postgres restart (immediate)');
  await load(ctx, 'pg', ctx.mode.load, 6000);
  await agentCase(ctx, 'pg', 6000);
  await sleep(rand(500, 2500));
  ctx.world.pg.stop('immediate');
  await sleep(ctx.mode.pgDownMs);
  await ctx.world.pg.start();
  const since = Date.now();
  f.ran = true;
  await recover(ctx, f, since);
}

/** runner-a SIGSTOPped past the dispatch consumer's ack wait while new commands arrive, then SIGCONT. */
export async function pauseRunner(ctx: Ctx): Promise<void> {
  const f = fault(ctx, `runner SIGSTOP ${Math.round(ctx.mode.pauseMs / 1000)} s`);
  const svc = ctx.world.services.get('runner-a')!;
  await load(ctx, 'pause', ctx.mode.load, 4000);
  await sleep(rand(300, 1500));
  svc.signal('SIGSTOP');
  const stoppedAt = Date.now();
  f.ran = true;
  try {
    // Commands sent while the runner is frozen: some are dispatched to it and must run exactly once.
    await load(ctx, 'pause-during', ctx.mode.load, 3000);
    await sleep(Math.max(0, ctx.mode.pauseMs - (Date.now() - stoppedAt)));
  } finally {
    svc.signal('SIGCONT');
  }
  await recover(ctx, f, Date.now());
}

/** runner-b's host (a network namespace) cut off for `cutMs`, then healed. */
export async function partitionRunner(ctx: Ctx): Promise<void> {
  const f = fault(ctx, `runner host cut off ${Math.round(ctx.mode.cutMs / 1000)} s`);
  const b = ctx.world.runnerIds['runner-b'];
  const end = Date.now() + 60_000;
  while (!(await ctx.registry.live(new Date(), ctx.world.timings.runnerLostAfterMs).catch(() => [])).some((r) => r.runnerId === b) && Date.now() < end) await sleep(300);
  const ts: Launched[] = [];
  let onB: Launched[] = [];
  for (let i = 0; i < 3 && onB.length === 0; i++) {
    const round = await load(ctx, 'cut', ctx.mode.load + 2, Math.min(ctx.mode.cutMs / 2, 20_000));
    ts.push(...round);
    const where = await waitStarted(ctx, round);
    onB = round.filter((t) => where.get(t.taskId) === b);
  }
  f.notes.push(`${onB.length} of ${ts.length} tasks on the cut host`);
  await sleep(rand(500, 1500));
  ctx.world.cutNs.cut();
  const cutAt = Date.now();
  try {
    // Commands keep arriving during the cut.
    await load(ctx, 'cut-during', 2, 2000);
    await sleep(Math.max(0, ctx.mode.cutMs - (Date.now() - cutAt)));
  } finally {
    ctx.world.cutNs.heal();
  }
  const since = Date.now();
  for (const t of ctx.launched) if (t.scenario.startsWith('cut')) t.settleFrom = since;
  f.ran = onB.length > 0;
  if (!f.ran) f.notes.push('no task ran on the cut host: the fault tested nothing');
  await recover(ctx, f, since);
}

/** runner-c's host removed for good: its namespace destroyed with the runner and its commands in it. */
export async function removeRunner(ctx: Ctx): Promise<void> {
  const f = fault(ctx, 'runner host removed for good');
  const c = await ctx.world.startRemovable();
  const id = ctx.world.runnerIds['runner-c'];
  const end = Date.now() + 60_000;
  while (!(await ctx.registry.live(new Date(), ctx.world.timings.runnerLostAfterMs)).some((r) => r.runnerId === id)) {
    if (Date.now() > end || !c.running) throw new Error('the removable runner never registered');
    await sleep(200);
  }
  let onC: Launched[] = [];
  for (let i = 0; i < 3 && onC.length === 0; i++) {
    // One more command than runners: the coordinator spreads a burst over the least loaded (runner-c, just
    // started, is among them), so at least one lands on the host that is about to go.
    const ts = await load(ctx, 'gone', Math.max(ctx.mode.load, 3) + 1, 15_000);
    const where = await waitStarted(ctx, ts);
    onC = ts.filter((t) => where.get(t.taskId) === id);
  }
  for (const t of onC) t.mayBeLost = true;
  f.notes.push(`${onC.length} tasks on the removed host`);
  await sleep(rand(1000, 3000));
  await c.kill();
  ctx.world.goneNs.destroy();
  const since = Date.now();
  f.ran = onC.length > 0;
  await recover(ctx, f, since);
  // Their end comes after the runner is declared lost, not after their command's end.
  for (const t of onC) t.settleFrom = since + ctx.world.timings.runnerLostAfterMs + ctx.world.timings.reconcileMs;
}

/** Malformed messages on every stream and RPC subject, foreign-tenant stops and reads; then the stack must still work. */
export async function malformedAndForeign(ctx: Ctx): Promise<void> {
  const f = fault(ctx, 'malformed + foreign-tenant messages');
  const t = topology('');
  const [victim, bystander] = await load(ctx, 'foreign', 2, 8000);
  await waitStarted(ctx, [victim!, bystander!]);
  const junk: (string | Uint8Array)[] = ['not json', '{}', '{"type":"TaskRegistered","v":99,"data":7}', JSON.stringify({ type: 'task.finished', v: 1, data: { taskId: victim!.taskId } }), new Uint8Array([0, 255, 254, 1, 2]), 'x'.repeat(200_000)];
  const subjects = [
    t.task(`junk-${process.pid}`),
    t.cmd(`junk-${process.pid}`),
    t.log(`junk-${process.pid}`),
    t.cancel(ctx.world.runnerIds['runner-a']),
    t.conv(`junk-${process.pid}`),
    // A real conversation gets junk too: its projection, SSE and runtime consumers must skip it.
    t.conv(ctx.mainConv),
  ];
  let published = 0;
  for (const s of subjects) {
    for (const j of junk) {
      const h = natsHeaders();
      h.set('Hp-Offset', 'minus-one');
      await ctx.nats.js.publish(s, typeof j === 'string' ? new TextEncoder().encode(j) : j, { headers: h });
      published++;
    }
  }
  // Junk on the RPC subjects: answered with an error or not at all, never a crash.
  for (const s of Object.values(t.rpc)) for (const j of junk.slice(0, 4)) await ctx.nats.nc.request(s, typeof j === 'string' ? new TextEncoder().encode(j) : j, { timeout: 2000 }).catch(() => undefined);
  f.notes.push(`${published} junk messages on TASKS, LOGS, CANCELS, CONV`);

  // A stop for acme's task sent on the bus in the name of another tenant.
  const rpc = await ctx.nats.nc.request(t.rpc.stopTask, new TextEncoder().encode(JSON.stringify({ tenant: ctx.mallory.tenant, userId: ctx.mallory.user, taskId: victim!.taskId })), { timeout: 10_000 }).catch(() => null);
  const answer = rpc ? (JSON.parse(new TextDecoder().decode(rpc.data)) as { ok?: boolean }) : null;
  if (answer?.ok) ctx.misdirected.push(`stop-task RPC of tenant ${ctx.mallory.tenant} accepted for ${victim!.taskId}`);
  // A stale generation: refused (409), the task runs on.
  const stale = await ctx.alice.call('POST', `/v1/tasks/${victim!.taskId}/stop`, { attempt: 7 });
  if (stale.status !== 409) ctx.misdirected.push(`stop with a stale attempt answered ${stale.status}`);
  victim!.mustNotStop = true;

  // Foreign-tenant reads and writes over HTTP: every one must be 404.
  const m = ctx.mallory;
  const probes: [string, string, unknown?][] = [
    ['GET', `/v1/conversations/${ctx.mainConv}`],
    ['GET', `/v1/conversations/${ctx.mainConv}/tasks`],
    ['GET', `/v1/conversations/${ctx.mainConv}/audit`],
    ['GET', `/v1/conversations/${ctx.mainConv}/events`],
    ['GET', `/v1/tasks/${victim!.taskId}`],
    ['GET', `/v1/tasks/${victim!.taskId}/output?offset=0`],
    ['POST', `/v1/tasks/${victim!.taskId}/stop`, {}],
    ['POST', `/v1/conversations/${ctx.mainConv}/commands`, { command: 'echo pwned' }],
    ['POST', `/v1/conversations/${ctx.mainConv}/messages`, { text: 'hello' }],
    ['POST', `/v1/conversations/${ctx.mainConv}/members`, { userId: m.user }],
    ['POST', `/v1/conversations/${ctx.mainConv}/stop-all`, {}],
  ];
  for (const [method, path, body] of probes) {
    const r = await m.call(method, path, body, {}, 10_000).catch((e) => ({ status: -1, json: (e as Error).message, headers: new Headers() }));
    if (r.status !== 404) ctx.crossTenant.push(`${m.tenant} ${method} ${path} answered ${r.status}`);
  }
  const listed = await m.call('GET', `/v1/tasks`);
  if (listed.status !== 200 || (Array.isArray(listed.json) ? listed.json : (listed.json?.tasks ?? [])).some((x: { taskId?: string }) => x.taskId === victim!.taskId)) ctx.crossTenant.push(`GET /v1/tasks of ${m.tenant} answered ${listed.status} or listed acme's task`);
  f.ran = true;
  await recover(ctx, f, Date.now());
}

/** Launches a little load in mallory's own conversation, so its SSE stream has traffic of its own. */
export async function malloryLoad(ctx: Ctx): Promise<void> {
  for (let i = 0; i < 2; i++) ctx.launched.push(await launch(ctx.mallory, ctx.malloryConv, 'mallory', { lines: 40, perTick: 20, intervalMs: 100, exitCode: 0 }));
}

export { durationMs };
