import { GuardViolation } from '@handplane/domain';
import { checkDetachment, checkPolling, checkRepeatedRead } from './guards';

function violation(f: () => void): GuardViolation {
  try {
    f();
  } catch (e) {
    if (e instanceof GuardViolation) return e;
    throw e;
  }
  throw new Error('no violation');
}

describe('guards', () => {
  it('G2 refuses detachment with an explanation and a way forward', () => {
    const e = violation(() => checkDetachment('npm run build &'));
    expect(e.rule).toBe('G2');
    expect(e.message).toMatch(/`npm run build &`: `&` runs it in the background/);
    expect(e.message).toMatch(/Run the command in the foreground instead/);
    expect(() => checkDetachment('npm run build')).not.toThrow();
  });

  it('G2 refuses what it cannot parse', () => {
    const e = violation(() => checkDetachment('echo "unterminated'));
    expect(e.rule).toBe('G2');
    expect(e.message).toMatch(/could not be parsed as a shell command.*closing quote/);
  });

  it('G3 refuses a poll only while a task runs in the background, naming the wait to declare', () => {
    expect(() => checkPolling('sleep 10', [])).not.toThrow();
    const e = violation(() => checkPolling('sleep 10', ['t1']));
    expect(e.rule).toBe('G3');
    expect(e.message).toContain('wait_for_tasks ["t1"]');
    expect(e.message).toContain('end your turn');
    expect(() => checkPolling('make test', ['t1'])).not.toThrow();
  });

  it('G3 refuses a repeated empty read of a running task, not the first one nor one with new bytes', () => {
    const first = { taskId: 't1', offset: 10, bytes: 0, finished: false };
    expect(() => checkRepeatedRead([], 't1', 10, 0, false)).not.toThrow();
    expect(violation(() => checkRepeatedRead([first], 't1', 10, 0, false)).message).toMatch(/no new bytes again.*wait_for_tasks \["t1"\]/);
    expect(() => checkRepeatedRead([first], 't1', 10, 5, false)).not.toThrow();
    expect(() => checkRepeatedRead([first], 't1', 10, 0, true)).not.toThrow();
    expect(() => checkRepeatedRead([first], 't2', 10, 0, false)).not.toThrow();
  });
});
