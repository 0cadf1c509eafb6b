import { decideSignal } from './fence';
import { generateSchedule, simulate } from './fence-model.spec-helper';

const running = { taskId: 't1', generation: { epoch: 2, attempt: 3 }, ended: false };

describe('decideSignal (the fence)', () => {
  it('delivers only to the exact task and generation', () => {
    expect(decideSignal(running, { taskId: 't1', generation: { epoch: 2, attempt: 3 } })).toEqual({ type: 'deliver' });
    expect(decideSignal(running, { taskId: '', generation: { epoch: 2, attempt: 3 } })).toEqual({ type: 'deliver' });
  });

  it.each([
    ['an older attempt', { taskId: 't1', generation: { epoch: 2, attempt: 2 } }],
    ['a newer attempt', { taskId: 't1', generation: { epoch: 2, attempt: 4 } }],
    ['an older epoch', { taskId: 't1', generation: { epoch: 1, attempt: 3 } }],
    ['another task', { taskId: 't2', generation: { epoch: 2, attempt: 3 } }],
  ])('refuses %s as stale, even once the command ended', (_what, req) => {
    expect(decideSignal(running, req)).toMatchObject({ type: 'stale', reason: expect.stringMatching(/^stale .*nothing was signalled$/) });
    expect(decideSignal({ ...running, ended: true }, req).type).toBe('stale');
  });

  it('answers already_exited to the right generation of an ended command, and invalid without a generation', () => {
    expect(decideSignal({ ...running, ended: true }, { taskId: 't1', generation: { epoch: 2, attempt: 3 } })).toEqual({ type: 'already_exited' });
    expect(decideSignal(running, { taskId: 't1', generation: undefined }).type).toBe('invalid');
  });
});

describe('stop versus retry: 10,000 seeded interleavings of the pure model', () => {
  const SEEDS = 10_000;

  it('never misdirects a signal under the fence (exits, retries, stop-alls, delayed/reordered/duplicated stops, restarts, reused pids)', () => {
    let misdirected = 0;
    let delivered = 0;
    let stale = 0;
    const failing: number[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const out = simulate(generateSchedule(seed), 'fenced');
      misdirected += out.misdirected;
      if (out.misdirected > 0 && failing.length < 5) failing.push(seed);
      for (const a of out.trace) {
        if (a.type !== 'signal') continue;
        if (a.expect === 'delivered') {
          delivered++;
          // A delivery always names the generation of the command it was addressed to.
          expect(a.generation.attempt).toBe(a.to);
        } else if (a.expect === 'stale') stale++;
      }
    }
    expect({ misdirected, failing }).toEqual({ misdirected: 0, failing: [] });
    // The schedules really exercise the fence: both deliveries and refusals happen often.
    expect(delivered).toBeGreaterThan(SEEDS / 2);
    expect(stale).toBeGreaterThan(SEEDS / 4);
  });

  it('the same interleavings do misdirect without the fence (delivery by stored pid): the property can fail', () => {
    let misdirected = 0;
    for (let seed = 1; seed <= SEEDS; seed++) misdirected += simulate(generateSchedule(seed), 'pid-only').misdirected;
    expect(misdirected).toBeGreaterThan(100);
  });

  it('is reproducible from its seed', () => {
    expect(simulate(generateSchedule(42), 'fenced')).toEqual(simulate(generateSchedule(42), 'fenced'));
    expect(generateSchedule(42)).not.toEqual(generateSchedule(43));
  });
});
