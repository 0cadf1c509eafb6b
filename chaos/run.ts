/**
 * `npm run chaos` (full) / `npm run chaos:short`: runs the fault catalogue against the real stack on
 * this machine — its own nats-server, Postgres and network namespaces, never the shared ones — and
 * prints a table of figures. Exit code 0 only when every figure is 0 and every fault ran.
 *   --short        the CI version (about 3 minutes)
 *   --json FILE    also write the figures as JSON
 */
import { writeFileSync } from 'node:fs';
import { connectNats, createPool, RunnerRegistry } from '@handplane/platform';
import { topology } from '@handplane/contracts';
import { measure, type Figures, type Measured } from './figures';
import { startWorld, type World } from './harness';
import { killEachService, malformedAndForeign, malloryLoad, partitionRunner, pauseRunner, removeRunner, restartNats, restartPostgres, type Ctx, type FaultResult, type Mode } from './scenarios';
import { DroppingSse } from './sse';

export const SHORT: Mode = { short: true, killRounds: 1, natsDownMs: 2000, pgDownMs: 2000, pauseMs: 14_000, cutMs: 15_000, sseDropEveryMs: 2500, load: 2, settleMs: 45_000 };
export const FULL: Mode = { short: false, killRounds: 3, natsDownMs: 10_000, pgDownMs: 10_000, pauseMs: 30_000, cutMs: 90_000, sseDropEveryMs: 3000, load: 6, settleMs: 60_000 };

export interface ChaosReport extends Measured {
  readonly mode: 'short' | 'full';
  readonly faults: FaultResult[];
  readonly ok: boolean;
  readonly elapsedMs: number;
}

const FIGURE_LABELS: Record<keyof Figures, string> = {
  bytesLost: 'bytes lost',
  bytesDuplicated: 'bytes duplicated',
  tasksStuck: 'tasks stuck',
  duplicateWakeups: 'duplicate wake-ups',
  missingWakeups: 'missing wake-ups',
  misdirectedStops: 'misdirected stops',
  crossTenantLeaks: 'cross-tenant leaks',
  falseSuccesses: 'false successes',
  wrongFinalStates: 'wrong final states',
  sseEventsLost: 'SSE events lost on resume',
  sseEventsDuplicated: 'SSE events repeated on resume',
  serviceCrashes: 'unexpected service exits',
};

const fmtMs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The table the suite prints. */
export function formatReport(r: ChaosReport): string {
  const lines: string[] = [];
  const w = Math.max(...Object.values(FIGURE_LABELS).map((l) => l.length), ...r.faults.map((f) => f.name.length)) + 2;
  lines.push(`chaos (${r.mode}): ${r.tasksChecked} tasks, ${r.bytesChecked} bytes checked in ${fmtMs(r.elapsedMs)}`);
  lines.push('', `${'figure'.padEnd(w)}value  (must be 0)`, `${'-'.repeat(w)}-----`);
  for (const [k, label] of Object.entries(FIGURE_LABELS)) {
    const v = r.figures[k as keyof Figures];
    lines.push(`${label.padEnd(w)}${String(v).padStart(5)}${v === 0 ? '' : '   <-- FAIL'}`);
  }
  lines.push('', `${'fault'.padEnd(w)}ran  recovery (heal → first round trip)`, `${'-'.repeat(w)}---  ---------`);
  for (const f of r.faults) {
    const rec = f.recoveryMs.length ? f.recoveryMs.map(fmtMs).join(', ') : 'none';
    lines.push(`${f.name.padEnd(w)}${(f.ran ? 'yes' : 'NO').padEnd(5)}${rec}${f.notes.length ? `   (${f.notes.join('; ')})` : ''}`);
  }
  lines.push('', r.ok ? 'RESULT: every figure is 0 and every fault ran' : 'RESULT: FAILED');
  return lines.join('\n');
}

/** Runs the whole catalogue once. Cleans up its processes, namespaces and directories whatever happens. */
export async function runChaos(mode: Mode, rawLog: (s: string) => void = (s) => process.stderr.write(`[chaos] ${s}\n`)): Promise<ChaosReport> {
  const started = Date.now();
  // Each line says when it happened (seconds since the start): where the run's time goes.
  const log = (s: string) => rawLog(`+${Math.round((Date.now() - started) / 1000)}s ${s}`);
  const timings = mode.short ? { runnerLostAfterMs: 25_000, reconcileMs: 3000, foregroundMs: 2000 } : { runnerLostAfterMs: mode.cutMs + 30_000, reconcileMs: 5000, foregroundMs: 2000 };
  let world: World | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    log(`${sig}: cleaning up`);
    void (world?.teardown() ?? Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    world = await startWorld(timings, log);
    const nats = await connectNats(world.nats.url, 'chaos-suite');
    const pool = createPool(world.pg.url, 4);
    try {
      const registry = await RunnerRegistry.open(nats, topology('').runnersBucket);
      const alice = await world.client('alice', 'acme');
      const mallory = await world.client('mallory', 'globex');
      const ctx: Ctx = {
        world,
        mode,
        nats,
        registry,
        pool,
        alice,
        mallory,
        mainConv: await alice.conversation(`chaos-main-${process.pid}`),
        probeConv: await alice.conversation(`chaos-probe-${process.pid}`),
        malloryConv: await mallory.conversation(`chaos-mallory-${process.pid}`),
        launched: [],
        agentCases: [],
        faults: [],
        misdirected: [],
        crossTenant: [],
        sse: [],
        log,
      };
      const sse = [new DroppingSse(alice, ctx.mainConv, mode.sseDropEveryMs), new DroppingSse(mallory, ctx.malloryConv, mode.sseDropEveryMs)];
      ctx.sse.push(...sse);
      for (const s of sse) s.start();
      const sseFault: FaultResult = { name: `SSE client dropped every ~${Math.round(mode.sseDropEveryMs / 1000)} s`, ran: false, recoveryMs: [], notes: [] };
      ctx.faults.push(sseFault);

      await malloryLoad(ctx);
      await killEachService(ctx);
      await restartNats(ctx);
      await restartPostgres(ctx);
      await pauseRunner(ctx);
      await partitionRunner(ctx);
      await malformedAndForeign(ctx);
      await removeRunner(ctx);
      log('measuring');
      const measured = await measure(ctx);
      sseFault.ran = sse[0]!.drops > 0 && sse[1]!.drops > 0;
      sseFault.notes.push(`${sse[0]!.drops + sse[1]!.drops} drops`);
      const ok = Object.values(measured.figures).every((v) => v === 0) && ctx.faults.every((f) => f.ran && (f.name.startsWith('SSE') || f.recoveryMs.length > 0));
      return { ...measured, mode: mode.short ? 'short' : 'full', faults: ctx.faults, ok, elapsedMs: Date.now() - started };
    } finally {
      await nats.nc.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
    }
  } finally {
    await world?.teardown();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const mode = args.includes('--short') ? SHORT : FULL;
  const jsonAt = args.indexOf('--json');
  const report = await runChaos(mode);
  process.stdout.write(`\n${formatReport(report)}\n`);
  if (report.details.length) process.stdout.write(`\ndetails:\n${report.details.map((d) => `  ${d}`).join('\n')}\n`);
  if (jsonAt >= 0 && args[jsonAt + 1]) writeFileSync(args[jsonAt + 1]!, JSON.stringify(report, null, 2));
  process.exit(report.ok ? 0 : 1);
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`chaos failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(2);
  });
}
