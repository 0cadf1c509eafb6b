// The one table `npm run bench` prints: each figure of ours next to its baseline measured in the same
// run, and their ratio. Pure (no I/O) so its arithmetic is unit-tested (table.spec.ts).

/** A latency sample summarised by its percentiles (milliseconds), or a single value with its unit. */
export type Measure =
  | { readonly kind: 'latency'; readonly p50: number; readonly p99: number; readonly n: number }
  | { readonly kind: 'value'; readonly value: number; readonly unit: string };

/** One line of the table: our figure, the baseline it is compared with, and what to know about both. */
export interface Row {
  readonly figure: string;
  readonly ours: Measure;
  readonly baselineLabel: string;
  readonly baseline: Measure;
  readonly note?: string;
}

/** Nearest-rank percentile (the same definition as bench/ingest and bench/runner). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Summarises latency samples (ms). */
export function latency(samples: readonly number[]): Measure {
  return { kind: 'latency', p50: percentile(samples, 50), p99: percentile(samples, 99), n: samples.length };
}

export const value = (v: number, unit: string): Measure => ({ kind: 'value', value: v, unit });

/**
 * ours ÷ baseline: for a latency one ratio per percentile (p50, p99), else one. Whether higher is
 * better depends on the figure (a rate vs a time), so the ratio is never inverted: the header says
 * "ours ÷ baseline" and each reader knows which way is good for that line.
 */
export function ratios(row: Pick<Row, 'ours' | 'baseline'>): number[] {
  const { ours, baseline } = row;
  if (ours.kind === 'latency' && baseline.kind === 'latency') return [ours.p50 / baseline.p50, ours.p99 / baseline.p99];
  if (ours.kind === 'value' && baseline.kind === 'value') {
    if (ours.unit !== baseline.unit) throw new Error(`cannot compare ${ours.unit} with ${baseline.unit}`);
    return [ours.value / baseline.value];
  }
  throw new Error('a latency is compared with a latency, a value with a value');
}

/** Three significant digits at most, never scientific notation. */
export function num(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  return n.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

export function formatRatio(r: number): string {
  return Number.isFinite(r) ? `${num(r)}×` : '—';
}

export function formatMeasure(m: Measure): string {
  return m.kind === 'latency' ? `p50 ${num(m.p50)} ms / p99 ${num(m.p99)} ms (n=${m.n})` : `${num(m.value)} ${m.unit}`;
}

const escape = (s: string) => s.replace(/\|/g, '\\|');

/** The table as Markdown (pastes into a README), with numbered notes under it. */
export function renderTable(rows: readonly Row[], title: string): string {
  const notes: string[] = [];
  const lines = rows.map((r) => {
    let figure = r.figure;
    if (r.note) {
      notes.push(r.note);
      figure += ` [${notes.length}]`;
    }
    const ratio = ratios(r).map(formatRatio).join(' / ');
    return `| ${escape(figure)} | ${formatMeasure(r.ours)} | ${escape(r.baselineLabel)}: ${formatMeasure(r.baseline)} | ${ratio} |`;
  });
  return [
    title,
    '',
    '| figure | ours | baseline (same run) | ours ÷ baseline |',
    '|---|---|---|---|',
    ...lines,
    '',
    ...notes.map((n, i) => `[${i + 1}] ${n}`),
  ].join('\n');
}
