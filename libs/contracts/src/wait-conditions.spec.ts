import { compileOutputPattern, conditionRefusal, scanLines, waitConditionSchema, type ScanCarry } from './wait-conditions';

const enc = (s: string) => new TextEncoder().encode(s);
const start: ScanCarry = { bytes: new Uint8Array(0), lineOffset: 0, nextOffset: 0 };
const re = (p: string) => {
  const c = compileOutputPattern(p);
  if (!c.ok) throw new Error(c.reason);
  return c.regex;
};

describe('condition waits: input (issue 10.1)', () => {
  it('accepts the four conditions and refuses anything else', () => {
    for (const until of ['exit', { outputMatches: 'ready' }, { portOpen: 8080 }, { fileExists: 'out/done' }]) expect(waitConditionSchema.safeParse({ taskId: 't', until }).success).toBe(true);
    for (const until of ['ready', { outputMatches: '' }, { portOpen: 0 }, { portOpen: 70000 }, { outputMatches: 'a', portOpen: 1 }, {}]) expect(waitConditionSchema.safeParse({ taskId: 't', until }).success).toBe(false);
    expect(waitConditionSchema.safeParse({ taskId: 't', until: 'exit', timeoutMs: 0 }).success).toBe(false);
  });

  it('refuses invalid, overlong and catastrophic patterns with a reason', () => {
    expect(conditionRefusal({ outputMatches: '(' })).toMatch(/not a valid regular expression/);
    expect(conditionRefusal({ outputMatches: 'x'.repeat(257) })).toMatch(/at most 256/);
    for (const p of ['(a+)+$', '(a*)*b', '(.*)*', '(a|aa)+', '(\\w+\\s?){2,}x']) expect(conditionRefusal({ outputMatches: p })).toMatch(/catastrophic/);
    expect(conditionRefusal({ outputMatches: '(a)\\1' })).toMatch(/backreferences/);
    expect(conditionRefusal({ outputMatches: 'listening on (port )?\\d+' })).toBeNull();
    expect(conditionRefusal({ portOpen: 3000 })).toBeNull();
    expect(conditionRefusal({ fileExists: 'dist/ready' })).toBeNull();
    for (const p of ['/etc/passwd', '../other/x', 'a/../../b', 'a\0b']) expect(conditionRefusal({ fileExists: p })).toMatch(/relative to the workspace/);
  });
});

describe('condition waits: line scan', () => {
  it('finds the first matching line and the offset it starts at, across chunk boundaries', () => {
    const r1 = scanLines(re('ready'), enc('booting\nstill boo'), start, false);
    expect(r1.match).toBeNull();
    expect(r1.carry).toMatchObject({ lineOffset: 8, nextOffset: 17 });
    const r2 = scanLines(re('^server ready on \\d+$'), enc('ting\nserver rea'), r1.carry, false);
    expect(r2.match).toBeNull();
    const r3 = scanLines(re('^server ready on \\d+$'), enc('dy on 80\r\nmore\n'), r2.carry, false);
    expect(r3.match).toEqual({ line: 'server ready on 80', offset: 22 });
  });

  it('matches an unfinished last line only when the output is final', () => {
    expect(scanLines(re('done$'), enc('a\ndone'), start, false).match).toBeNull();
    expect(scanLines(re('done$'), enc('a\ndone'), start, true).match).toEqual({ line: 'done', offset: 2 });
  });

  it('matches on bounded input: an endless line is cut, invalid UTF-8 is replaced', () => {
    const long = scanLines(re('x'), enc('a'.repeat(100_000)), start, false);
    expect(long.carry.bytes.length).toBeLessThanOrEqual(4096 * 4);
    expect(long.carry.nextOffset).toBe(100_000);
    expect(scanLines(re('^ok \\uFFFD$'), new Uint8Array([0x6f, 0x6b, 0x20, 0xff, 0x0a]), start, false).match).toEqual({ line: 'ok \uFFFD', offset: 0 });
  });
});
