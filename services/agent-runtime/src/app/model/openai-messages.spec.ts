import { toChatMessages } from './openai-messages';
import type { TranscriptEntry } from './transcript';

const base = { taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice' };

describe('toChatMessages: what the model is told about tasks (issue 10)', () => {
  it('tells a completion by its receipt, never a bare status', () => {
    const receipt = {
      outcome: 'killed' as const,
      status: 'cancelled' as const,
      exitCode: null,
      signal: 'SIGTERM',
      requestedBy: { reason: 'user' as const, by: 'bob', at: 'T' },
      summary: 'killed by SIGTERM at the request of user bob',
      evidence: { runnerId: 'r', epoch: 1, attempt: 1, startedAt: null, finishedAt: 'T', outputBytes: 0, resultState: 'readable' as const, exitReason: 'stopped' },
    };
    const t: TranscriptEntry[] = [{ kind: 'task_event', ...base, origin: 'agent', status: 'cancelled', exitCode: null, signal: 'SIGTERM', resultState: 'readable', outputBytes: 0, receipt }];
    expect(toChatMessages(t).at(-1)!.content).toMatch(/^\[task\] task t1 killed by SIGTERM at the request of user bob: /);
    const old: TranscriptEntry[] = [{ kind: 'task_event', ...base, origin: 'agent', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 0 }];
    expect(toChatMessages(old).at(-1)!.content).toMatch(/^\[task\] task t1 succeeded \(no receipt recorded\): /);
  });

  it('tells a condition wait that resolved, and that the task still runs', () => {
    const cond = { ...base, conditionId: 'k', runId: 'r1', until: { outputMatches: 'ready' } };
    const matched: TranscriptEntry[] = [{ kind: 'task_condition', ...cond, outcome: 'matched', line: 'ready on 80', offset: 12, detail: 'd' }];
    expect(toChatMessages(matched).at(-1)!.content).toBe(
      '[task] task t1 is still running; its output matched {"outputMatches":"ready"} at offset 12: "ready on 80". Declare another wait, read its output, or stop it.',
    );
    const timedOut: TranscriptEntry[] = [{ kind: 'task_condition', ...cond, outcome: 'timed_out', detail: 'no line matched before the timeout' }];
    expect(toChatMessages(timedOut).at(-1)!.content).toMatch(/still running; no line matched before the timeout\./);
  });
});
