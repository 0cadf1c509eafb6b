/**
 * Runs `fn` over `items`, at most `size` at a time. Each call holds a Postgres connection (an
 * advisory lock) while it talks to a runner, so fan-outs stay well below the pool size.
 */
export async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}
