import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RawTail } from './raw-tail';
import { SpoolBudget } from './spool-budget';
import { CommandSpool } from './spool';
import type { CommandMeta } from './types';

const meta: CommandMeta = { v: 1, commandId: 'c1', taskId: 't1', conversationId: 'conv', tenant: 'acme', generation: { epoch: 1, attempt: 1 }, command: 'true', cwd: '', startedAtMs: 0, pid: null, processIdentity: null, runnerBootId: 'b', ackedOffset: 0 };

/** RawTail against real files in a temp dir (no processes): the copy into the spool, exactly once. */
describe('RawTail', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hp-rawtail-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function setup(budget = new SpoolBudget(0)) {
    const spool = CommandSpool.forCommand(dir, 'c1');
    const ref: { tail?: RawTail } = {};
    const writer = await spool.create(meta, { onWritten: () => undefined, onPressure: (p) => ref.tail?.setPaused(p), onFailed: () => undefined });
    await writeFile(spool.rawPaths.stdout, '');
    await writeFile(spool.rawPaths.stderr, '');
    const tail = (ref.tail = await RawTail.start(spool.rawPaths, { stdout: 0, stderr: 0 }, writer, budget, { onBudgetExhausted: () => undefined }));
    return { spool, writer, tail };
  }

  it('copies each byte once even when pressure is released while the final drain runs', async () => {
    const { spool, writer, tail } = await setup();
    tail.setPaused(true);
    const out = Buffer.alloc(5 * 1024 * 1024, 'o');
    await appendFile(spool.rawPaths.stdout, out);
    await appendFile(spool.rawPaths.stderr, 'err');
    const finishing = tail.finish();
    // What the writer's low-water event does in the middle of the final copy.
    for (let i = 0; i < 20; i++) {
      tail.setPaused(false);
      await new Promise((r) => setImmediate(r));
    }
    await finishing;
    await writer.close();
    const spooled = await readFile(spool.outputPath);
    expect(spooled.length).toBe(out.length + 3);
    expect(tail.positions).toEqual({ stdout: out.length, stderr: 3 });
  });

  it('resumes from given per-stream positions (a re-adopted command): nothing before them is copied again', async () => {
    const spool = CommandSpool.forCommand(dir, 'c1');
    const writer = await spool.create(meta, { onWritten: () => undefined, onPressure: () => undefined, onFailed: () => undefined });
    await writeFile(spool.rawPaths.stdout, 'already-copied|new');
    await writeFile(spool.rawPaths.stderr, 'old|NEW');
    const tail = await RawTail.start(spool.rawPaths, { stdout: 15, stderr: 4 }, writer, new SpoolBudget(0), { onBudgetExhausted: () => undefined });
    await tail.finish();
    await writer.close();
    const text = (await readFile(spool.outputPath)).toString();
    expect(text.length).toBe(6);
    expect(text.split('').sort().join('')).toBe('NEWenw'.split('').sort().join(''));
  });

  it('stops at the spool budget and reports how much it kept', async () => {
    const spool = CommandSpool.forCommand(dir, 'c1');
    const writer = await spool.create(meta, { onWritten: () => undefined, onPressure: () => undefined, onFailed: () => undefined });
    await writeFile(spool.rawPaths.stdout, Buffer.alloc(1000, 'x'));
    await writeFile(spool.rawPaths.stderr, '');
    const kept: number[] = [];
    const tail = await RawTail.start(spool.rawPaths, { stdout: 0, stderr: 0 }, writer, new SpoolBudget(300), { onBudgetExhausted: (n) => kept.push(n) });
    await tail.finish();
    await writer.close();
    expect((await readFile(spool.outputPath)).length).toBe(300);
    expect(kept).toEqual([300]);
  });
});
