import { createHash } from 'node:crypto';

// The same alphabet as subject tokens (topology): an id that passes can be put in a subject.
const ID = /^[A-Za-z0-9_-]{1,128}$/;

/** True when `id` can name a conversation or task (anything else cannot exist). */
export function isValidId(id: string): boolean {
  return ID.test(id);
}

/**
 * A UUID-shaped id derived from its parts, so a retried request (same idempotency key, same
 * caller) names the same thing, and two callers using the same key never collide.
 */
export function stableId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\0')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
