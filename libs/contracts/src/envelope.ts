import { z } from 'zod';

/** Metadata carried by every event on the wire. */
export const metadataSchema = z.object({
  at: z.string(),
  actor: z.string().optional(),
  traceparent: z.string().optional(),
});

/**
 * Builds the schema of one event version: `{type, v, data, metadata}` with literal type and version.
 * A published version is never edited: add `v: 2` with an upcaster instead.
 */
export function eventSchema<T extends string, V extends number, D extends z.ZodTypeAny>(type: T, v: V, data: D) {
  return z.object({ type: z.literal(type), v: z.literal(v), data, metadata: metadataSchema });
}

/** What travels on the wire: the domain message plus its version. */
export type Versioned<E> = E & { v: number };

/** Omit that distributes over a union (the built-in one does not). */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
