import { conversationRunDecider as decider, type ConversationEvent, type ConversationRunState } from '@handplane/domain';
import { Referee, type Truth } from './adversarial/referee';

const at = '2026-01-01T00:00:00.000Z';
const truth: Truth = { running: (id) => id === 'run1', conversationOf: (id) => (id === 'run1' || id === 'done1' ? 'c1' : undefined), userOf: () => 'alice' };
const fold = (events: ConversationEvent[]): ConversationRunState => events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
const started: ConversationEvent = { type: 'run.started', data: { runId: 'r1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata: { at } };
const todos = (status: 'in_progress' | 'completed', taskIds: string[]): ConversationEvent => ({ type: 'todos.updated', data: { runId: 'r1', todos: [{ id: 'a', content: 'x', status, taskIds }], waitForTasks: [] }, metadata: { at } });

/** Feeds events one by one (as the suites do) and returns the rules the referee flagged. */
function judge(history: ConversationEvent[], events: ConversationEvent[]): string[] {
  const r = new Referee('c1', truth);
  let s = fold(history);
  for (const e of events) {
    const before = s;
    s = decider.evolve(s, e);
    r.observe({ conv: before }, { conv: s }, [e]);
  }
  return r.violations.map((v) => v.rule);
}

/** The referee of the adversarial suites can fail: each of its checks fires on a violation. */
describe('adversarial referee', () => {
  it('flags a completed todo whose task runs (G4) and a wait on a finished or foreign task (G5)', () => {
    expect(judge([started], [todos('completed', ['run1'])])).toEqual(['G4']);
    expect(judge([started], [todos('completed', ['done1'])])).toEqual([]);
    const wait = (taskIds: string[]): ConversationEvent => ({ type: 'wait.declared', data: { runId: 'r1', taskIds }, metadata: { at } });
    expect(judge([started], [wait(['done1']), wait(['other']), wait(['run1'])])).toEqual(['G5', 'G5']);
  });

  it('flags a run that completes with unfinished todos or waits on nothing (G6)', () => {
    expect(judge([started, todos('in_progress', [])], [{ type: 'run.finished', data: { runId: 'r1', outcome: 'completed' }, metadata: { at } }])).toEqual(['G6']);
    expect(judge([started], [{ type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata: { at } }])).toEqual(['G6']);
  });

  it('flags a human-started run that keeps the wait (G7), a completion run under another user (G9) or while a question is open (G10)', () => {
    const waiting: ConversationEvent[] = [started, { type: 'wait.declared', data: { runId: 'r1', taskIds: ['run1'] }, metadata: { at } }, { type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata: { at } }];
    // A message run that started without `wait.invalidated` keeps the wait: the referee sees it.
    const fake: ConversationEvent = { type: 'run.started', data: { runId: 'r2', userId: 'bob', trigger: 'message', messageId: 'm2' }, metadata: { at } };
    const carried = fold(waiting);
    const r = new Referee('c1', truth);
    r.observe({ conv: carried }, { conv: { ...fold([...waiting, fake]), waitForTasks: ['run1'] } as ConversationRunState }, [fake]);
    expect(r.violations.map((v) => v.rule)).toEqual(['G7']);
    const asked: ConversationEvent = { type: 'question.asked', data: { questionId: 'q1', runId: 'r1', text: '?' }, metadata: { at } };
    const woken: ConversationEvent = { type: 'run.started', data: { runId: 'r2', userId: 'mallory', trigger: 'task_event', taskId: 'run1' }, metadata: { at } };
    expect(judge([started, asked, { type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata: { at } }], [woken])).toEqual(['G10', 'G9']);
  });

  it('flags a call answered twice and a request sent twice (G8), and detaching or polling commands that ran (G2, G3)', () => {
    const r = new Referee('c1', truth);
    const result: ConversationEvent = { type: 'tool.result', data: { runId: 'r1', callId: 'x', name: 'exec', ok: true, result: {} }, metadata: { at } };
    r.observe({ conv: fold([]) }, { conv: fold([]) }, [result, result]);
    r.finalChecks([{ command: 'nohup x', requestId: 'q1', runningAtStart: [] }, { command: 'sleep 5', requestId: 'q2', runningAtStart: ['run1'] }], [{ requestId: 'q1' }, { requestId: 'q1' }], new Map([['nohup x', 'detach'], ['sleep 5', 'poll']]));
    expect(r.violations.map((v) => v.rule)).toEqual(['G8', 'G2', 'G3', 'G8', 'G8']);
  });
});
