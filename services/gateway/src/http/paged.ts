import type { Response } from 'express';

/** Answers one page of a paged list: its rows, and `X-Next-After` (pass it back as `after`) when more follow. */
export function page<T>(res: Response, rows: T[], nextAfter: number | undefined): T[] {
  if (nextAfter !== undefined) res.setHeader('X-Next-After', String(nextAfter));
  return rows;
}
