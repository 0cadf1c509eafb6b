import { seededRandom } from '@handplane/testing';
import { decideSignal } from './fence';
import type { Generation } from './types';

/**
 * A pure model of one task's life on a runner, for the stop-versus-retry property test: seeded
 * schedules of exits, retries (attempt n+1 as a new command), stop-alls (epoch + 1), stops that are
 * delayed, reordered, duplicated or routed to the task's newest command, and runner restarts.
 * Processes get pids from a tiny pool, lowest free first, so pids are reused all the time.
 * `simulate` replays a schedule under a delivery policy and counts misdirected signals: signals
 * that reached a process of another (task, attempt, epoch) than the request named. The real
 * runner replays the same trace (runner-fence.int.spec.ts).
 */

export type Op =
  | { readonly type: 'exit' }
  | { readonly type: 'retry' }
  | { readonly type: 'stopAll' }
  | { readonly type: 'stop'; readonly pick: number; readonly route: 'own' | 'newest' }
  | { readonly type: 'deliver'; readonly pick: number }
  | { readonly type: 'duplicate'; readonly pick: number }
  | { readonly type: 'restart' };

/** What the model expects the runner to answer to a signal. */
export type Answer = 'delivered' | 'stale' | 'already_exited';

/** The concrete steps of a schedule, attempts numbered from 1: what a real test replays. */
export type Action =
  | { readonly type: 'exec'; readonly attempt: number; readonly epoch: number }
  | { readonly type: 'exit'; readonly attempt: number }
  | { readonly type: 'signal'; readonly to: number; readonly generation: Generation; readonly expect: Answer }
  | { readonly type: 'restart' };

export interface Outcome {
  readonly trace: readonly Action[];
  readonly misdirected: number;
  /** Per attempt: how it ended in the model ('running' = still running when the schedule ends). */
  readonly ends: readonly ('self' | 'stopped' | 'running')[];
}

/** Which process a delivery reaches: the runner's rule (fence + identity), or a naive one for contrast. */
export type DeliveryPolicy = 'fenced' | 'pid-only';

/** The seeded PRNG of @handplane/testing (mulberry32): the model must be reproducible from its seed. */
export const prng = seededRandom;

const WEIGHTS: readonly [Op['type'], number][] = [
  ['exit', 2],
  ['retry', 2],
  ['stop', 4],
  ['deliver', 5],
  ['duplicate', 2],
  ['stopAll', 1],
  ['restart', 1],
];

/** A schedule of `length` operations drawn from `seed`. */
export function generateSchedule(seed: number, length = 12): Op[] {
  const next = prng(seed);
  const total = WEIGHTS.reduce((n, [, w]) => n + w, 0);
  const ops: Op[] = [];
  for (let i = 0; i < length; i++) {
    let x = next() * total;
    const type = (WEIGHTS.find(([, w]) => (x -= w) < 0) ?? WEIGHTS[0])[0];
    const pick = Math.floor(next() * 1_000_000);
    if (type === 'stop') ops.push({ type, pick, route: next() < 0.5 ? 'own' : 'newest' });
    else if (type === 'deliver' || type === 'duplicate') ops.push({ type, pick });
    else ops.push({ type } as Op);
  }
  return ops;
}

interface Proc {
  readonly pid: number;
  readonly start: number;
  readonly attempt: number;
  alive: boolean;
}

interface Request {
  readonly to: number;
  readonly generation: Generation;
  readonly route: 'own' | 'newest';
}

const PID_POOL = [100, 101, 102];

/** Replays `ops` on a fresh task. Pure: the same ops and policy always give the same outcome. */
export function simulate(ops: readonly Op[], policy: DeliveryPolicy): Outcome {
  const trace: Action[] = [];
  const procs: Proc[] = [];
  const attempts: { epoch: number; proc: Proc | null; end: 'self' | 'stopped' | 'running' }[] = [];
  const pending: Request[] = [];
  const sent: Request[] = [];
  let epoch = 1;
  let clock = 0;
  let misdirected = 0;

  const start = () => {
    const used = new Set(procs.filter((p) => p.alive).map((p) => p.pid));
    const pid = PID_POOL.find((p) => !used.has(p));
    const attempt = attempts.length + 1;
    // A full pool models a fork that fails: the attempt ends at once (its command exists, its process does not).
    const proc = pid === undefined ? null : { pid, start: ++clock, attempt, alive: true };
    if (proc) procs.push(proc);
    attempts.push({ epoch, proc, end: proc ? 'running' : 'self' });
    trace.push({ type: 'exec', attempt, epoch });
    if (!proc) trace.push({ type: 'exit', attempt });
  };
  const running = () => attempts.map((a, i) => ({ ...a, attempt: i + 1 })).filter((a) => a.end === 'running');
  const newest = () => attempts.length;

  const deliver = (req: Request) => {
    // Routing happens at delivery: a delayed "newest" request may reach a newer command than it was issued for.
    const to = req.route === 'newest' ? newest() : req.to;
    const target = attempts[to - 1];
    let answer: Answer;
    let hit: Proc | null = null;
    if (policy === 'fenced') {
      const d = decideSignal({ taskId: 't', generation: { epoch: target.epoch, attempt: to }, ended: target.end !== 'running' }, { taskId: 't', generation: req.generation });
      answer = d.type === 'deliver' ? 'delivered' : d.type === 'already_exited' ? 'already_exited' : 'stale';
      // Identity check at delivery: the recorded (pid, start) must still be alive.
      const p = target.proc;
      if (answer === 'delivered' && p && procs.some((q) => q.alive && q.pid === p.pid && q.start === p.start)) hit = p;
    } else {
      // Naive: whatever process now holds the pid recorded for the addressed command.
      hit = procs.find((q) => q.alive && q.pid === target.proc?.pid) ?? null;
      answer = hit ? 'delivered' : 'already_exited';
    }
    trace.push({ type: 'signal', to, generation: req.generation, expect: answer });
    if (!hit) return;
    if (hit.attempt !== req.generation.attempt || attempts[hit.attempt - 1].epoch !== req.generation.epoch) misdirected++;
    hit.alive = false;
    attempts[hit.attempt - 1].end = 'stopped';
  };

  start();
  for (const op of ops) {
    switch (op.type) {
      case 'exit': {
        const r = running().pop();
        if (!r?.proc) break;
        r.proc.alive = false;
        attempts[r.attempt - 1].end = 'self';
        trace.push({ type: 'exit', attempt: r.attempt });
        break;
      }
      case 'retry':
        start();
        break;
      case 'stopAll':
        for (const r of running()) if (r.epoch === epoch) pending.push({ to: r.attempt, generation: { epoch: r.epoch, attempt: r.attempt }, route: 'own' });
        epoch++;
        break;
      case 'stop': {
        const a = 1 + (op.pick % attempts.length);
        pending.push({ to: a, generation: { epoch: attempts[a - 1].epoch, attempt: a }, route: op.route });
        break;
      }
      case 'deliver': {
        if (pending.length === 0) break;
        const [req] = pending.splice(op.pick % pending.length, 1);
        sent.push(req);
        deliver(req);
        break;
      }
      case 'duplicate':
        if (sent.length > 0) deliver(sent[op.pick % sent.length]);
        break;
      case 'restart':
        // The runner's table is rebuilt from what it persisted (generation, identity, end): same answers.
        trace.push({ type: 'restart' });
        break;
    }
  }
  return { trace, misdirected, ends: attempts.map((a) => a.end) };
}
