import { FixedClock, Unavailable, ValidationError } from '@handplane/kernel';
import type { Logger, RunnerRecord, RunnerRegistry } from '@handplane/platform';
import type { CoordinatorDeps } from './deps';
import { chooseRunner } from './dispatch';
import { commandIdFor, taskIdFor } from './ids';
import { Placements } from './placements';
import type { ExecOrder, RunnerPort } from './runner-port';
import { deadlineFor } from './start-task';

const clock = new FixedClock('2026-01-01T00:00:00.000Z');
const rec = (runnerId: string, running: number, capacity = 4, ageMs = 0): RunnerRecord => ({
  runnerId,
  address: `127.0.0.1:${runnerId.length}`,
  capacity,
  running,
  version: 'v',
  bootId: 'b',
  heartbeatAt: new Date(clock.now().getTime() - ageMs).toISOString(),
});
const order = { commandId: 'c-1', attempt: 1 } as ExecOrder;

// The registry's selection rule (`live`) is the real one; only its storage is left out.
function deps(records: RunnerRecord[], known: string[] = []) {
  const registry = { live: async (now: Date, lostAfterMs: number) => records.filter((r) => now.getTime() - new Date(r.heartbeatAt).getTime() <= lostAfterMs) } as unknown as RunnerRegistry;
  const runners: RunnerPort = {
    exec: async () => undefined,
    knows: async (address) => known.includes(address),
    signal: async () => 'delivered',
    writeStdin: async () => ({ written: 0, closed: false, totalWritten: 0 }),
    list: async () => ({ runnerId: 'r', bootId: 'b', commands: [] }),
    close: () => undefined,
  };
  return { registry, runners, clock, logger: {} as Logger, tasks: {} as CoordinatorDeps['tasks'], settings: { runnerLostAfterMs: 30_000 } as CoordinatorDeps['settings'] };
}

describe('chooseRunner', () => {
  it('takes the live runner with the fewest running commands', async () => {
    expect((await chooseRunner(deps([rec('busy', 3), rec('idle', 0), rec('some', 1)]), order, false)).runnerId).toBe('idle');
  });
  it('skips runners that missed their heartbeat and runners at capacity', async () => {
    expect((await chooseRunner(deps([rec('lost', 0, 4, 60_000), rec('full', 2, 2), rec('ok', 3)]), order, false)).runnerId).toBe('ok');
  });
  it('on a redelivery, goes back to the runner that already has the command', async () => {
    const records = [rec('idle', 0), rec('has-it', 3)];
    expect((await chooseRunner(deps(records, [records[1]!.address]), order, true)).runnerId).toBe('has-it');
    expect((await chooseRunner(deps(records, [records[1]!.address]), order, false)).runnerId).toBe('idle');
  });
  it('is Unavailable (retried) with no live runner or none with room', async () => {
    await expect(chooseRunner(deps([]), order, false)).rejects.toBeInstanceOf(Unavailable);
    await expect(chooseRunner(deps([rec('full', 1, 1)]), order, false)).rejects.toBeInstanceOf(Unavailable);
  });
});

describe('start-task rules', () => {
  const s = { defaultDeadlineMs: 3_600_000, maxDeadlineMs: 86_400_000 };
  it('uses the default deadline, a given one, and refuses one above the maximum', () => {
    expect(deadlineFor(undefined, s)).toBe(3_600_000);
    expect(deadlineFor(5000, s)).toBe(5000);
    expect(deadlineFor(86_400_000, s)).toBe(86_400_000);
    expect(() => deadlineFor(86_400_001, s)).toThrow(ValidationError);
  });
  it('derives the same ids for the same request, different ones otherwise', () => {
    expect(taskIdFor('acme', 'r1')).toBe(taskIdFor('acme', 'r1'));
    expect(taskIdFor('acme', 'r1')).not.toBe(taskIdFor('globex', 'r1'));
    // Length-prefixed parts: ("a:b", "c") and ("a", "b:c") never collide.
    expect(taskIdFor('a:b', 'c')).not.toBe(taskIdFor('a', 'b:c'));
    const t = taskIdFor('acme', 'r1');
    expect(commandIdFor(t, 1)).not.toBe(commandIdFor(t, 2));
    expect(t).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('chooseRunner with the placements of this coordinator', () => {
  it('spreads a burst over equally idle runners instead of sending it all to the lowest id (heartbeats lag behind)', async () => {
    const placements = new Placements();
    const d = { ...deps([rec('runner-a', 0), rec('runner-b', 0), rec('runner-c', 0)]), placements };
    const chosen: string[] = [];
    for (let i = 0; i < 4; i++) chosen.push((await chooseRunner(d, order, false)).runnerId);
    expect(chosen).toEqual(['runner-a', 'runner-b', 'runner-c', 'runner-a']);
  });

  it('forgets placements once a newer heartbeat counts them', async () => {
    const placements = new Placements();
    await chooseRunner({ ...deps([rec('runner-a', 0), rec('runner-b', 0)]), placements }, order, false);
    const later = new FixedClock(new Date(clock.now().getTime() + 5000).toISOString());
    const beat = (r: RunnerRecord) => ({ ...r, heartbeatAt: later.now().toISOString() });
    // runner-a's new heartbeat counts the command (running 1); runner-b is idle: b is next, then a and b tie again.
    const d = { ...deps([beat(rec('runner-a', 1)), beat(rec('runner-b', 0))]), clock: later, placements };
    expect((await chooseRunner(d, order, false)).runnerId).toBe('runner-b');
    expect(placements.pending(beat(rec('runner-a', 1)))).toBe(0);
  });

  it('avoids a runner whose Exec just failed while another one is open, and uses it when it is the only one', async () => {
    const placements = new Placements(10_000);
    placements.unreachable('runner-a', clock.now().getTime());
    expect((await chooseRunner({ ...deps([rec('runner-a', 0), rec('runner-b', 3)]), placements }, order, false)).runnerId).toBe('runner-b');
    expect((await chooseRunner({ ...deps([rec('runner-a', 0)]), placements }, order, false)).runnerId).toBe('runner-a');
    const later = new FixedClock(new Date(clock.now().getTime() + 10_001).toISOString());
    expect(placements.reachable('runner-a', later.now().getTime())).toBe(true);
  });
});
