import type { Pool } from 'pg';
import type { Projection } from '@handplane/platform';

/** Every row of a projection's tables as sorted JSON lines (its volatile columns left out). */
export async function dump(pool: Pool, p: Projection): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of p.tables ?? []) {
    const ignore = [...(p.volatileColumns?.[t] ?? [])];
    const r = await pool.query<{ row: unknown }>(`SELECT to_jsonb(x) - $1::text[] AS row FROM public.${t} x`, [ignore]);
    out[t] = r.rows.map((x) => JSON.stringify(x.row)).sort();
  }
  return out;
}

/** Row-level differences between two dumps (empty when equal). */
export function diff(a: Record<string, string[]>, b: Record<string, string[]>): string[] {
  const out: string[] = [];
  for (const t of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const left = new Set(a[t] ?? []);
    const right = new Set(b[t] ?? []);
    for (const r of left) if (!right.has(r)) out.push(`${t}: only left ${r}`);
    for (const r of right) if (!left.has(r)) out.push(`${t}: only right ${r}`);
    if ((a[t] ?? []).length !== (b[t] ?? []).length) out.push(`${t}: ${(a[t] ?? []).length} rows vs ${(b[t] ?? []).length}`);
  }
  return out;
}
