import { formatReport, runChaos, SHORT, type ChaosReport } from './run';

/**
 * The short chaos run (what `npm run chaos:short` does) against the built services, with its own
 * nats-server, Postgres and network namespaces (root needed). Every figure must be 0, every fault
 * must have run and the stack must have recovered from each.
 */
// Opt-in in the e2e tier (CHAOS_E2E=1, root needed: namespaces, a Postgres cluster run as
// `postgres`): it takes minutes. CI runs the same short suite as its own step (`.ci/run`).
// Elsewhere it is reported as skipped, never as passed.
const canRun = process.getuid?.() === 0 && process.env.CHAOS_E2E === '1';
const chaosDescribe = canRun ? describe : describe.skip;

chaosDescribe('chaos suite (short)', () => {
  let report: ChaosReport;

  beforeAll(async () => {
    report = await runChaos(SHORT, (s) => process.stderr.write(`[chaos] ${s}\n`));
    process.stdout.write(`\n${formatReport(report)}\n${report.details.map((d) => `  ${d}`).join('\n')}\n`);
  }, 900_000);

  it('ran every fault and recovered from each', () => {
    expect(report.faults.length).toBeGreaterThanOrEqual(11);
    expect(report.faults.filter((f) => !f.ran).map((f) => `${f.name}: ${f.notes.join('; ')}`)).toEqual([]);
    expect(report.faults.filter((f) => !f.name.startsWith('SSE') && f.recoveryMs.length === 0).map((f) => `${f.name}: ${f.notes.join('; ')}`)).toEqual([]);
    expect(report.tasksChecked).toBeGreaterThan(20);
  });

  it('lost, duplicated, leaked and faked nothing', () => {
    expect({ figures: report.figures, details: report.details.filter((d) => !d.startsWith('SSE ')) }).toEqual({
      figures: {
        bytesLost: 0,
        bytesDuplicated: 0,
        tasksStuck: 0,
        duplicateWakeups: 0,
        missingWakeups: 0,
        misdirectedStops: 0,
        crossTenantLeaks: 0,
        falseSuccesses: 0,
        wrongFinalStates: 0,
        sseEventsLost: 0,
        sseEventsDuplicated: 0,
        serviceCrashes: 0,
      },
      details: [],
    });
  });
});
