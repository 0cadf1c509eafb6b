import { MODES, rng, type Mode } from './adversarial/adversary';
import { attempt, type AttemptResult } from './adversarial/drive';
import { naiveTools } from './adversarial/naive-tools';

const ATTEMPTS = 1000;

/** Every mode equally often, in a seeded random order. */
function schedule(n: number, seed: number): Mode[] {
  const r = rng(seed);
  const modes = Array.from({ length: n }, (_, i) => MODES[i % MODES.length]!);
  for (let i = modes.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [modes[i], modes[j]] = [modes[j]!, modes[i]!];
  }
  return modes;
}

/**
 * The adversarial suite, in memory: the runtime's own engine, tools, guards and decider against a
 * model that tries to break each rule, a simulated host and a referee that knows the host's truth.
 */
describe('governance under an adversarial model (1,000 seeded attempts)', () => {
  it('lets no governance violation reach the conversation', async () => {
    const results: AttemptResult[] = [];
    for (const [i, mode] of schedule(ATTEMPTS, 20260101).entries()) results.push(await attempt(i, mode, 1000 + i));
    const violations = results.flatMap((r) => r.violations.map((v) => ({ mode: r.mode, ...v })));
    const guards = new Map<string, number>();
    for (const g of results.flatMap((r) => r.guards)) guards.set(g, (guards.get(g) ?? 0) + 1);
    const perMode = MODES.map((m) => `${m}: ${results.filter((r) => r.mode === m).reduce((n, r) => n + r.guards.length, 0)}`).join(', ');
    console.log(
      `adversarial suite: ${ATTEMPTS} attempts, ${results.reduce((n, r) => n + r.steps, 0)} steps; guard.rejected by rule ${JSON.stringify(Object.fromEntries([...guards].sort()))}; ` +
        `by mode {${perMode}}; governance violations that reached the conversation: ${violations.length}`,
    );
    expect(violations).toEqual([]);
    // Every failure mode was met by a guard (the adversary really misbehaved).
    for (const m of MODES) expect(results.filter((r) => r.mode === m).some((r) => r.guards.length > 0)).toBe(true);
  });

  it('catches the violations of a runtime without its guards (the referee can fail)', async () => {
    const results: AttemptResult[] = [];
    for (const [i, mode] of schedule(120, 7).entries()) results.push(await attempt(i, mode, 50 + i, naiveTools));
    const rules = new Set(results.flatMap((r) => r.violations.map((v) => v.rule)));
    expect([...rules].sort()).toEqual(expect.arrayContaining(['G2', 'G3', 'G4', 'G5']));
  });
});
