import { promptOf, PromptWatch } from './prompt-watch';

const b = (s: string) => Buffer.from(s, 'utf8');

describe('promptOf', () => {
  it.each([
    ['Continue? [y/N] ', 'Continue? [y/N]'],
    ['Overwrite file.txt (yes/no)? ', 'Overwrite file.txt (yes/no)?'],
    ['Proceed [Y/n]', 'Proceed [Y/n]'],
    ['log line\n[sudo] password for alice: ', '[sudo] password for alice:'],
    ['Enter passphrase for key /root/.ssh/id_ed25519:', 'Enter passphrase for key /root/.ssh/id_ed25519:'],
    ['Username: ', 'Username:'],
    ['? Pick a template (Use arrow keys)', '? Pick a template (Use arrow keys)'],
    ['\u001b[1mName?\u001b[0m ', 'Name?'],
    ['>>> ', '>>>'],
  ])('%j → %j', (out, want) => {
    expect(promptOf(b(out))).toBe(want);
  });

  it('is null for output that ends with a newline or whose last line is no question', () => {
    for (const out of ['Continue? [y/N]\n', 'building 42%', 'done', '', 'line\n', 'Downloading file 3 of 7 ']) expect(promptOf(b(out))).toBeNull();
  });

  it('keeps only the end of a very long line', () => {
    const p = promptOf(b(`${'x'.repeat(400)} continue? `))!;
    expect(p.length).toBe(200);
    expect(p.endsWith('continue?')).toBe(true);
  });
});

describe('PromptWatch', () => {
  it('reports a prompt once, after the quiet period, at the offset where the output ended', () => {
    const w = new PromptWatch(1000);
    w.push(6, b('hello\n'), 0);
    expect(w.dueIn(0)).toBeUndefined();
    w.push(22, b('Continue? [y/N] '), 100);
    expect(w.dueIn(600)).toBe(500);
    expect(w.take(600)).toBeNull();
    expect(w.take(1100)).toEqual({ offset: 22, prompt: 'Continue? [y/N]' });
    expect(w.take(5000)).toBeNull();
    expect(w.dueIn(5000)).toBeUndefined();
    // The answer is echoed, then a second prompt: reported too.
    w.push(26, b('yes\n'), 6000);
    expect(w.dueIn(6000)).toBeUndefined();
    w.push(36, b('Password: '), 6100);
    expect(w.take(7100)).toEqual({ offset: 36, prompt: 'Password:' });
  });

  it('more output before the quiet period ends cancels the prompt; a prompt cut across chunks is found', () => {
    const w = new PromptWatch(1000);
    w.push(10, b('Continue? '), 0);
    w.push(20, b('no, going\n'), 500);
    expect(w.take(5000)).toBeNull();
    w.push(25, b('Ok [y'), 6000);
    expect(w.dueIn(6000)).toBeUndefined();
    w.push(29, b('/N] '), 6001);
    expect(w.take(7001)).toEqual({ offset: 29, prompt: 'Ok [y/N]' });
  });

  it('is off with quietMs 0', () => {
    const w = new PromptWatch(0);
    w.push(16, b('Continue? [y/N] '), 0);
    expect(w.dueIn(10_000)).toBeUndefined();
    expect(w.take(10_000)).toBeNull();
  });
});
