import { isTerminalTaskStatus } from '@handplane/domain';
import { Adversary, rng, type Mode } from './adversary';
import { Referee, type Truth, type Violation } from './referee';
import { SimHost } from './sim-host';
import { Simulation } from './simulator';
import type { Tool } from '../../src/app/tools/tool';

/** The host's truth for the referee. */
export function truthOf(host: SimHost): Truth {
  return {
    running: (id) => host.isRunning(id),
    conversationOf: (id) => host.tasks.get(id)?.view.conversationId,
    userOf: (id) => host.tasks.get(id)?.view.userId,
  };
}

export interface AttemptResult {
  readonly mode: Mode;
  readonly violations: readonly Violation[];
  readonly guards: readonly string[];
  readonly steps: number;
}

/**
 * One adversarial attempt in memory: a conversation, a message, the adversary trying `mode`, the
 * host finishing background tasks and people steering or answering at seeded random moments,
 * until the conversation settles. Returns what the referee found.
 */
export async function attempt(index: number, mode: Mode, seed: number, tools?: (host: SimHost) => Readonly<Record<string, Tool>>): Promise<AttemptResult> {
  const r = rng(seed);
  const conv = `conv-${index}`;
  const host = new SimHost(
    (command) => (command === 'npm run build' ? { kind: 'background' } : { kind: 'finish', exitCode: 0, output: `${command}\n` }),
    new Map([
      [conv, { tenant: 'acme', epoch: 1 }],
      ['conv-other', { tenant: 'acme', epoch: 1 }],
    ]),
  );
  host.addTask('conv-other', 'sleep 1000', 'running', 't-foreign');
  const adversary = new Adversary(() => ({ mode, r }));
  const referee = new Referee(conv, truthOf(host));
  const sim = new Simulation(conv, host, adversary, (b, a, p) => referee.observe(b, a, p), undefined, tools?.(host));
  sim.say('alice', 'build it and verify it');
  let steers = 0;
  let steps = 0;
  for (; steps < 600; steps++) {
    const running = host.unfinished(conv).filter((id) => !isTerminalTaskStatus(host.tasks.get(id)!.view.status));
    if (running.length && r() < 0.1) host.finish(running[Math.floor(r() * running.length)]!, 0, 'built\n');
    if (steers < 2 && r() < 0.02) {
      steers++;
      sim.say('bob', 'how is it going?');
    }
    if (await sim.step()) continue;
    const open = sim.cp.conv.open ?? [];
    if (open.length) sim.answer(open[0]!.id, 'carry on', 'bob');
    else if (running.length) host.finish(running[0]!, 0, 'built\n');
    else break;
  }
  if (steps >= 600) referee.violations.push({ rule: 'liveness', detail: `attempt ${index} (${mode}) did not settle` });
  referee.finalChecks(
    [...host.tasks.values()].filter((t) => !t.requestId.startsWith('direct-')),
    host.requests,
    adversary.labels,
  );
  const guards = sim.events.filter((e) => e.type === 'guard.rejected').map((e) => (e.type === 'guard.rejected' ? e.data.rule : ''));
  return { mode, violations: referee.violations, guards, steps };
}
