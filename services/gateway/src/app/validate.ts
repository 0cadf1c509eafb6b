import type { z } from 'zod';
import { ValidationError } from '@handplane/kernel';

/** Parses a request body (absent = `{}`); failures become a ValidationError listing every issue. */
export function parseInput<S extends z.ZodTypeAny>(schema: S, raw: unknown, what = 'body'): z.infer<S> {
  const parsed = schema.safeParse(raw === undefined || raw === null ? {} : raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : what}: ${i.message}`);
  throw new ValidationError(`invalid ${what}: ${issues.join('; ')}`, issues);
}
