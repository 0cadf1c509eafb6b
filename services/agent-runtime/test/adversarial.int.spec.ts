import { conversationRunDecider as decider, type ConversationEvent, type ConversationRunState } from '@handplane/domain';
import { Adversary, MODES, rng, type Mode } from './adversarial/adversary';
import { Referee, type Truth } from './adversarial/referee';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

/**
 * A slice of the adversarial suite through the whole runtime (real NATS and Postgres, the
 * coordinator played by a fake): one conversation per failure mode, in seeded random order.
 */
describe('governance under an adversarial model (real NATS + Postgres)', () => {
  let h: Harness;
  let modeOf: (key: string) => { mode: Mode; r: () => number };
  const adversary = new Adversary((key) => modeOf(key));
  const behaviour = (command: string): Behaviour => (command === 'npm run build' ? { kind: 'background' } : { kind: 'finish', exitCode: 0, output: `${command}\n` });

  beforeAll(async () => {
    h = await startHarness('advint', behaviour, {}, { model: adversary });
  }, 60_000);
  afterAll(() => h?.stop(), 60_000);

  const truth = (): Truth => ({
    running: (id) => !!h.fake.tasks.get(id) && !h.fake.tasks.get(id)!.finished,
    conversationOf: (id) => h.fake.tasks.get(id)?.req.conversationId,
    userOf: (id) => h.fake.tasks.get(id)?.req.userId,
  });

  it('lets no governance violation reach the conversation, one attempt per failure mode', async () => {
    const r = rng(42);
    const order = [...MODES].sort(() => r() - 0.5);
    const found: { mode: Mode; rule: string; detail: string }[] = [];
    let guards = 0;
    for (const [i, mode] of order.entries()) {
      modeOf = () => ({ mode, r: rng(7000 + i) });
      const conv = await h.conversation(`adv-${i}`);
      const referee = new Referee(conv, truth());
      let state: ConversationRunState = decider.initialState();
      let judged = 0;
      const judge = async () => {
        const es = await h.events(conv);
        for (const e of es.slice(judged) as ConversationEvent[]) {
          const before = state;
          state = decider.evolve(state, e);
          referee.observe({ conv: before }, { conv: state }, [e]);
        }
        judged = es.length;
        return es;
      };
      await h.say(conv, 'alice', 'build it and verify it');
      for (let phase = 0; phase < 12; phase++) {
        await h.settled();
        const es = await judge();
        const question = ofType(es, 'question.asked').find((q) => !ofType(es, 'question.answered').some((a) => a.data.questionId === q.data.questionId));
        const running = [...h.fake.tasks.values()].find((t) => t.req.conversationId === conv && !t.finished);
        if (question) await h.append(conv, { type: 'question.answered', data: { questionId: question.data.questionId, text: 'carry on', by: 'bob' }, metadata: { at: new Date().toISOString(), actor: 'bob' } }, `answer:${question.data.questionId}`);
        else if (running) await h.fake.finish(running.taskId, 0, 'built\n');
        else break;
      }
      const es = await judge();
      const tasks = [...h.fake.tasks.values()].filter((t) => t.req.conversationId === conv);
      referee.finalChecks(
        tasks.map((t) => ({ command: t.req.input.command, requestId: t.req.requestId, runningAtStart: t.runningAtStart })),
        h.fake.requests.filter((id) => tasks.some((t) => t.req.requestId === id)).map((requestId) => ({ requestId })),
        adversary.labels,
      );
      guards += ofType(es, 'guard.rejected').length;
      found.push(...referee.violations.map((v) => ({ mode, ...v })));
      expect(ofType(es, 'run.finished').pop()?.data.outcome).toBe('completed');
    }
    console.log(`adversarial slice (real NATS + Postgres): ${order.length} attempts, ${guards} guard.rejected, governance violations that reached the conversation: ${found.length}`);
    expect(found).toEqual([]);
    expect(guards).toBeGreaterThanOrEqual(order.length);
  });
});
