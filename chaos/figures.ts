/**
 * The figures, measured after the faults: every task's bytes against what its command wrote, its
 * final state, wake-ups counted in CONV, SSE resumption against a clean read, tenant isolation.
 */
import { DeliverPolicy } from '@nats-io/jetstream';
import { topology } from '@handplane/contracts';
import type { Ctx } from './scenarios';
import { readAll } from './sse';
import { durationMs, expectedOutput, generatorCommand, probeFalseSuccesses, settle, sha256, TERMINAL, type Launched } from './workload';
import { sleep } from './infra';

export interface Figures {
  bytesLost: number;
  bytesDuplicated: number;
  tasksStuck: number;
  duplicateWakeups: number;
  missingWakeups: number;
  misdirectedStops: number;
  crossTenantLeaks: number;
  falseSuccesses: number;
  wrongFinalStates: number;
  sseEventsLost: number;
  sseEventsDuplicated: number;
  serviceCrashes: number;
}

export interface Measured {
  figures: Figures;
  tasksChecked: number;
  bytesChecked: number;
  details: string[];
}

/** Lines of `got` compared with the expected lines: missing bytes, extra bytes, and whether `got` is an exact prefix. */
export function compareBytes(expected: Buffer, got: Buffer): { lost: number; duplicated: number; prefix: boolean } {
  const exp = expected.toString('latin1').split('\n').slice(0, -1);
  const lines = got.toString('latin1').split('\n');
  const tail = lines.pop() ?? '';
  const want = new Map(exp.map((l, i) => [l, i]));
  const seen = new Set<string>();
  let duplicated = tail.length;
  for (const l of lines) {
    if (!want.has(l) || seen.has(l)) duplicated += l.length + 1;
    else seen.add(l);
  }
  let lost = 0;
  for (const l of exp) if (!seen.has(l)) lost += l.length + 1;
  return { lost, duplicated, prefix: expected.subarray(0, got.length).equals(got) };
}

/** Tasks the agent started from the `$ <generator>` messages, as Launched records. */
async function agentTasks(ctx: Ctx): Promise<Launched[]> {
  const out: Launched[] = [];
  for (const c of ctx.agentCases) {
    const cmd = generatorCommand(c.gen);
    let found: { taskId: string; commandId: string } | undefined;
    for (let i = 0; i < 120 && !found; i++) {
      const r = await c.client.call('GET', `/v1/conversations/${c.conversationId}/tasks`).catch(() => null);
      const list = (Array.isArray(r?.json) ? r!.json : (r?.json?.tasks ?? [])) as { taskId: string; commandId: string; command: string }[];
      found = list.find((x) => x.command === cmd);
      if (!found) await sleep(500);
    }
    if (!found) {
      out.push({ taskId: `missing-${c.gen.tag}`, commandId: '', conversationId: c.conversationId, client: c.client, gen: c.gen, launchedAt: Date.now(), scenario: c.scenario });
      continue;
    }
    out.push({ taskId: found.taskId, commandId: found.commandId, conversationId: c.conversationId, client: c.client, gen: c.gen, launchedAt: Date.now() - durationMs(c.gen), scenario: c.scenario });
  }
  return out;
}

async function convEvents(ctx: Ctx): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const t = topology('');
  const consumer = await ctx.nats.js.consumers.get(t.streams.CONV, { deliver_policy: DeliverPolicy.All });
  const info = await ctx.nats.jsm.streams.info(t.streams.CONV);
  const last = info.state.last_seq;
  const out: { type: string; data: Record<string, unknown> }[] = [];
  if (last === 0) return out;
  const iter = await consumer.consume({ max_messages: 1000 });
  for await (const m of iter) {
    try {
      const e = JSON.parse(new TextDecoder().decode(m.data)) as { type?: unknown; data?: unknown };
      if (typeof e.type === 'string' && e.data && typeof e.data === 'object') out.push({ type: e.type, data: e.data as Record<string, unknown> });
    } catch {
      /* the suite's own junk */
    }
    if (m.seq >= last) break;
  }
  await iter.close();
  return out;
}

export async function measure(ctx: Ctx): Promise<Measured> {
  const f: Figures = { bytesLost: 0, bytesDuplicated: 0, tasksStuck: 0, duplicateWakeups: 0, missingWakeups: 0, misdirectedStops: 0, crossTenantLeaks: 0, falseSuccesses: 0, wrongFinalStates: 0, sseEventsLost: 0, sseEventsDuplicated: 0, serviceCrashes: 0 };
  const details: string[] = [];
  const all = [...ctx.launched, ...(await agentTasks(ctx))];
  let bytesChecked = 0;
  const views = new Map<string, Record<string, unknown> | null>();

  // Every task gets until settleMs after its command's end (or the heal) to be terminal.
  await Promise.all(
    all.map(async (t) => {
      if (t.taskId.startsWith('missing-')) return views.set(t.taskId, null);
      const until = Math.max(t.launchedAt + durationMs(t.gen), t.settleFrom ?? 0) + ctx.mode.settleMs;
      views.set(t.taskId, await settle(t, Math.max(1000, until - Date.now())));
    }),
  );

  for (const t of all) {
    const v = views.get(t.taskId);
    const status = String(v?.status ?? 'unknown');
    if (!v || !TERMINAL.has(status)) {
      f.tasksStuck++;
      details.push(`stuck: ${t.scenario} ${t.taskId} is ${status}`);
      continue;
    }
    const expected = expectedOutput(t.gen);
    bytesChecked += expected.length;
    const out = await t.client.output(t.taskId).catch((e) => {
      details.push(`output of ${t.taskId} unreadable: ${(e as Error).message}`);
      return null;
    });
    const got = out?.bytes ?? Buffer.alloc(0);
    const cmp = compareBytes(expected, got);
    const partialAllowed = (t.stopped && status === 'cancelled') || (t.mayBeLost && status === 'lost');
    if (partialAllowed) {
      // A stopped or lost task keeps a durable prefix: it must be exact, and say it is incomplete.
      if (!cmp.prefix) {
        f.bytesDuplicated += cmp.duplicated;
        f.bytesLost += cmp.duplicated === 0 ? 1 : 0;
        details.push(`not an exact prefix: ${t.scenario} ${t.taskId} (${status})`);
      }
      // A cancelled command's output is complete (it wrote no more); a lost host's output never is.
      if (status === 'lost' && got.length < expected.length && out?.complete) {
        f.falseSuccesses++;
        details.push(`incomplete output said complete: ${t.scenario} ${t.taskId}`);
      }
    } else {
      f.bytesLost += cmp.lost;
      f.bytesDuplicated += cmp.duplicated;
      if (cmp.lost || cmp.duplicated) details.push(`bytes: ${t.scenario} ${t.taskId} ${status} lost ${cmp.lost} duplicated ${cmp.duplicated}`);
      else if (sha256(got) !== sha256(expected)) {
        f.bytesLost++;
        details.push(`bytes reordered: ${t.scenario} ${t.taskId}`);
      }
    }
    const wantStatus = t.stopped ? 'cancelled' : t.gen.exitCode === 0 ? 'succeeded' : 'failed';
    const allowed = t.mayBeLost ? [wantStatus, 'lost'] : [wantStatus];
    if (!allowed.includes(status)) {
      f.wrongFinalStates++;
      details.push(`final state: ${t.scenario} ${t.taskId} is ${status} (exit ${String(v.exitCode)}), expected ${allowed.join(' or ')}`);
      if (status === 'cancelled' && !t.stopped) {
        f.misdirectedStops++;
        details.push(`misdirected stop: ${t.taskId} was cancelled though no stop targeted it`);
      }
    }
    if (!t.stopped && status === 'succeeded' && (t.gen.exitCode !== 0 || v.exitCode !== 0 || !expected.equals(got))) {
      f.falseSuccesses++;
      details.push(`false success: ${t.scenario} ${t.taskId} exit ${String(v.exitCode)}, ${got.length}/${expected.length} bytes`);
    }
    if (t.gen.exitCode !== 0 && status === 'failed' && v.exitCode !== t.gen.exitCode) {
      f.wrongFinalStates++;
      details.push(`exit code: ${t.taskId} reported ${String(v.exitCode)}, command exited ${t.gen.exitCode}`);
    }
  }
  f.falseSuccesses += probeFalseSuccesses.length;
  details.push(...probeFalseSuccesses.map((p) => `false success (probe): ${p}`));

  // Every task of the run, probes included: none may stay unfinished.
  const open = await ctx.pool.query<{ task_id: string; status: string }>(`SELECT task_id, status FROM tasks WHERE status NOT IN ('succeeded','failed','cancelled','timed_out','lost')`);
  const known = new Set(all.map((t) => t.taskId));
  for (const r of open.rows.filter((x) => !known.has(x.task_id))) {
    f.tasksStuck++;
    details.push(`stuck (not launched by a scenario): ${r.task_id} is ${r.status}`);
  }

  // Wake-ups: one internal task event per finished attempt, one task_event run per wake.
  const events = await convEvents(ctx);
  const internal = new Map<string, number>();
  const runs = new Map<string, number>();
  const backgrounded = new Set<string>();
  for (const e of events) {
    if (e.type === 'task.backgrounded') backgrounded.add(String(e.data.taskId));
    if (e.type === 'task.internal_event') internal.set(`${String(e.data.taskId)}:${String(e.data.attempt)}`, (internal.get(`${String(e.data.taskId)}:${String(e.data.attempt)}`) ?? 0) + 1);
    if (e.type === 'run.started' && e.data.trigger === 'task_event') runs.set(String(e.data.taskId), (runs.get(String(e.data.taskId)) ?? 0) + 1);
  }
  for (const [k, n] of [...internal, ...runs]) {
    if (n > 1) {
      f.duplicateWakeups += n - 1;
      details.push(`duplicate wake-up: ${k} × ${n}`);
    }
  }
  const finished = await ctx.pool.query<{ task_id: string; attempt: number }>(`SELECT task_id, attempt FROM tasks WHERE status IN ('succeeded','failed','cancelled','timed_out','lost')`);
  for (const r of finished.rows) {
    if (!internal.has(`${r.task_id}:${r.attempt}`)) {
      f.missingWakeups++;
      details.push(`no internal task event for finished ${r.task_id}:${r.attempt}`);
    }
  }
  // The completion of a backgrounded agent task must reach the agent: its wake-up row consumed by a
  // run (a new run, or the run that was resumed after a runtime crash and saw the task finish).
  const consumed = await ctx.pool.query<{ task_id: string }>('SELECT task_id FROM wakeups WHERE consumed_by_run IS NOT NULL');
  const woken = new Set([...consumed.rows.map((r) => r.task_id), ...runs.keys()]);
  for (const c of ctx.agentCases) {
    const t = all.find((x) => x.gen.tag === c.gen.tag);
    // Only a task that went to the background wakes the agent; one that ended inside exec's window
    // was answered in the foreground (the window stretches while the coordinator is down).
    if (t && backgrounded.has(t.taskId) && !woken.has(t.taskId)) {
      f.missingWakeups++;
      details.push(`the agent was never woken for ${t.taskId} (${c.scenario})`);
    }
  }

  // SSE: what the dropped clients assembled against one clean read; and no event of the other tenant.
  const tenantOf = new Map(all.map((t) => [t.taskId, t.client.tenant]));
  for (const s of ctx.sse) {
    await s.stop();
    const client = s === ctx.sse[0] ? ctx.alice : ctx.mallory;
    const conv = s === ctx.sse[0] ? ctx.mainConv : ctx.malloryConv;
    const ids = s.events.map((e) => e.id);
    const upTo = ids.length ? Math.max(...ids) : 0;
    const ref = upTo ? await readAll(client, conv, upTo) : [];
    const seen = new Set<number>();
    for (const id of ids) {
      if (seen.has(id)) f.sseEventsDuplicated++;
      seen.add(id);
    }
    const missing = ref.filter((e) => !seen.has(e.id));
    f.sseEventsLost += missing.length;
    if (missing.length) details.push(`SSE ${client.tenant}: ${missing.length} events never delivered after resumption (first id ${missing[0]!.id})`);
    if (ref.length === 0 || ref[ref.length - 1]!.id < upTo) details.push(`SSE ${client.tenant}: the clean read ended before id ${upTo}`);
    for (const e of s.events) {
      const owner = typeof e.data?.taskId === 'string' ? tenantOf.get(e.data.taskId) : undefined;
      if (owner && owner !== client.tenant) ctx.crossTenant.push(`SSE of ${client.tenant} carried ${e.event} of a ${owner} task`);
    }
    details.push(...s.refusals.map((r) => `SSE of its owner (${client.tenant}): ${r}`), `SSE ${client.tenant}: ${s.drops} drops, ${s.reconnects} connections, ${ids.length} events`);
  }

  f.misdirectedStops += ctx.misdirected.length;
  details.push(...ctx.misdirected.map((m) => `misdirected stop: ${m}`));
  f.crossTenantLeaks += ctx.crossTenant.length;
  details.push(...ctx.crossTenant.map((m) => `cross-tenant: ${m}`));
  for (const svc of ctx.world.services.values()) {
    f.serviceCrashes += svc.unexpectedExits.length;
    details.push(...svc.unexpectedExits);
  }
  return { figures: f, tasksChecked: all.length, bytesChecked, details };
}
