import { commandRoundTrip } from './figures-latency';
import { parseArgs } from './run';
import { startBenchStack, type BenchStack } from './stack';
import { renderTable } from './table';

// Keeps `npm run bench` from rotting: the stack it starts (five service processes) and one cheap
// figure, end to end, with a real baseline beside it. No timing is asserted.
describe('npm run bench', () => {
  let s: BenchStack | undefined;
  afterAll(async () => {
    await s?.stop();
  });

  it('measures the command round trip on the real stack next to a plain spawn', async () => {
    s = await startBenchStack({ FOREGROUND_WINDOW_MS: '3000' });
    const rows = await commandRoundTrip(s, 2);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row!.ours).toMatchObject({ kind: 'latency', n: 2 });
    expect(row!.baseline).toMatchObject({ kind: 'latency', n: 2 });
    if (row!.ours.kind !== 'latency' || row!.baseline.kind !== 'latency') throw new Error('latency rows expected');
    expect(row!.ours.p50).toBeGreaterThan(0);
    expect(row!.baseline.p50).toBeGreaterThan(0);
    expect(renderTable(rows, 't')).toContain('| command round trip');
  });

  it('refuses unknown arguments and figures', () => {
    expect(parseArgs(['--quick', '--only', 'roundtrip,stop', '--size', 'crash=300'])).toEqual({ quick: true, only: ['roundtrip', 'stop'], sizes: { crash: 300 } });
    expect(() => parseArgs(['--size', 'crash=0'])).toThrow('bad --size crash=0');
    expect(() => parseArgs(['--fast'])).toThrow('unknown argument --fast');
    expect(() => parseArgs(['--only', 'nope'])).toThrow('unknown figure nope');
  });
});
