import { ValidationError } from '@handplane/kernel';
import { normalizeCwd, parseExec, requireCommandId, type RawExec } from './exec-input';

const ok: RawExec = {
  commandId: 'cmd-1',
  taskId: 'task_1',
  conversationId: 'conv-1',
  tenant: 'acme',
  generation: { epoch: 2, attempt: 1 },
  command: 'echo hi',
  cwd: '',
  env: { FOO: 'bar' },
  timeoutMs: 0,
};

function issuesOf(raw: Partial<RawExec>): string[] {
  try {
    parseExec({ ...ok, ...raw });
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return [...(e as ValidationError).issues];
  }
  throw new Error('expected a ValidationError');
}

describe('parseExec', () => {
  it('accepts a well-formed request and normalises cwd', () => {
    const input = parseExec({ ...ok, cwd: './src//lib/' });
    expect(input).toEqual({ ...ok, cwd: 'src/lib' });
  });

  it.each([
    ['empty command', { command: '' }, 'command must not be empty'],
    ['blank command', { command: ' \n\t' }, 'command must not be empty'],
    ['NUL in command', { command: 'echo a\0b' }, 'command must not contain NUL'],
    ['command over 64 KiB', { command: 'x'.repeat(64 * 1024 + 1) }, 'command must be at most 65536 bytes'],
    ['NUL in cwd', { cwd: 'a\0' }, 'cwd must not contain NUL'],
    ['absolute cwd', { cwd: '/etc' }, 'cwd must be relative to the workspace (no leading "/")'],
    ['cwd escaping with ..', { cwd: 'a/../../etc' }, 'cwd must stay inside the workspace (no "..")'],
    ['NUL in an env value', { env: { A: 'x\0y' } }, 'env A must not contain NUL'],
    ['bad env name', { env: { '1A': 'x' } }, `env name "1A" must be letters, digits and '_' (not starting with a digit)`],
    ['env name with =', { env: { 'A=B': 'x' } }, `env name "A=B" must be letters, digits and '_' (not starting with a digit)`],
    ['missing commandId', { commandId: '' }, 'commandId is required'],
    ['missing taskId', { taskId: '' }, 'taskId is required'],
    ['missing conversationId', { conversationId: '' }, 'conversationId is required'],
    ['path-like conversationId', { conversationId: '../x' }, `conversationId must be 1-128 letters, digits, '_' or '-'`],
    ['missing generation', { generation: undefined }, 'generation is required'],
  ])('refuses %s', (_name, raw, issue) => {
    expect(issuesOf(raw)).toContain(issue);
  });

  it('refuses more than 256 env entries', () => {
    const env = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`V${i}`, 'x']));
    expect(issuesOf({ env })).toEqual(['env must have at most 256 entries']);
  });

  it('never puts an env value into the error message', () => {
    try {
      parseExec({ ...ok, env: { TOKEN: 'sekrit\0' } });
      throw new Error('expected a ValidationError');
    } catch (e) {
      expect((e as Error).message).not.toContain('sekrit');
    }
  });

  it('lists every problem at once', () => {
    expect(issuesOf({ command: '', cwd: '/x', commandId: '' })).toEqual(['commandId is required', 'command must not be empty', 'cwd must be relative to the workspace (no leading "/")']);
  });
});

describe('normalizeCwd', () => {
  it.each([
    ['', ''],
    ['.', ''],
    ['./', ''],
    ['a/./b//c/', 'a/b/c'],
  ])('%j → %j', (cwd, expected) => expect(normalizeCwd(cwd)).toBe(expected));
});

describe('requireCommandId', () => {
  it('refuses an empty id', () => expect(() => requireCommandId('')).toThrow(ValidationError));
});
