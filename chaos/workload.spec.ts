import { execFileSync } from 'node:child_process';
import { compareBytes } from './figures';
import { expectedOutput, generatorCommand, type Generator } from './workload';

const gen: Generator = { tag: 'unit-1', lines: 25, perTick: 10, intervalMs: 1, exitCode: 0 };

describe('chaos generators', () => {
  it('write exactly the bytes the suite expects (bash runs the command)', () => {
    const out = execFileSync('bash', ['-c', generatorCommand(gen)]);
    expect(out.equals(expectedOutput(gen))).toBe(true);
    expect(out.length).toBe(25 * 64);
  });
});

describe('compareBytes', () => {
  const exp = expectedOutput(gen);
  const line = 64;

  it('counts nothing for equal bytes', () => {
    expect(compareBytes(exp, exp)).toEqual({ lost: 0, duplicated: 0, prefix: true });
  });

  it('counts missing lines as lost, and a prefix as a prefix', () => {
    expect(compareBytes(exp, exp.subarray(0, 10 * line))).toEqual({ lost: 15 * line, duplicated: 0, prefix: true });
    const hole = Buffer.concat([exp.subarray(0, 3 * line), exp.subarray(4 * line)]);
    expect(compareBytes(exp, hole)).toEqual({ lost: line, duplicated: 0, prefix: false });
  });

  it('counts repeated lines, foreign lines and a torn tail as duplicated', () => {
    const twice = Buffer.concat([exp.subarray(0, 5 * line), exp.subarray(3 * line)]);
    expect(compareBytes(exp, twice)).toEqual({ lost: 0, duplicated: 2 * line, prefix: false });
    const torn = Buffer.concat([exp, Buffer.from('junk')]);
    expect(compareBytes(exp, torn).duplicated).toBe(4);
  });
});
