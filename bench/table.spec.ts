import { formatMeasure, formatRatio, latency, num, percentile, ratios, renderTable, value, type Row } from './table';

describe('bench table', () => {
  it('takes nearest-rank percentiles', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted on purpose
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(() => percentile([], 50)).toThrow('no samples');
  });

  it('divides ours by the baseline per percentile, or per value of the same unit', () => {
    expect(ratios({ ours: latency([10, 20, 40]), baseline: latency([1, 2, 4]) })).toEqual([10, 10]);
    expect(ratios({ ours: value(50, 'MiB/s'), baseline: value(200, 'MiB/s') })).toEqual([0.25]);
    expect(() => ratios({ ours: value(1, 's'), baseline: value(1, 'MiB') })).toThrow('cannot compare s with MiB');
    expect(() => ratios({ ours: value(1, 's'), baseline: latency([1]) })).toThrow();
  });

  it('formats numbers to three significant digits and ratios with ×, a zero baseline as —', () => {
    expect([num(1234.5), num(45.67), num(4.567), num(0.04567)]).toEqual(['1235', '45.7', '4.57', '0.046']);
    expect(formatRatio(3.14159)).toBe('3.14×');
    expect(formatRatio(5 / 0)).toBe('—');
    expect(formatMeasure(latency([2, 4]))).toBe('p50 2.00 ms / p99 4.00 ms (n=2)');
  });

  it('renders one Markdown row per figure with its baseline, ratio and numbered notes', () => {
    const rows: Row[] = [
      { figure: 'round trip', ours: latency([30, 60]), baselineLabel: 'plain | spawn', baseline: latency([3, 4]), note: 'first note' },
      { figure: 'ingestion', ours: value(80, 'MiB/s'), baselineLabel: 'raw PG', baseline: value(160, 'MiB/s') },
    ];
    const out = renderTable(rows, 'title').split('\n');
    expect(out[0]).toBe('title');
    expect(out).toContain('| round trip [1] | p50 30.0 ms / p99 60.0 ms (n=2) | plain \\| spawn: p50 3.00 ms / p99 4.00 ms (n=2) | 10.0× / 15.0× |');
    expect(out).toContain('| ingestion | 80.0 MiB/s | raw PG: 160 MiB/s | 0.500× |');
    expect(out[out.length - 1]).toBe('[1] first note');
  });
});
