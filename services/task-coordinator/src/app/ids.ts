import { createHash } from 'node:crypto';

/** A UUID-shaped id (version nibble 8: custom, RFC 9562) from the SHA-256 of `parts`: same input, same id. */
export function deterministicId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.map((p) => `${p.length}:${p}`).join('|')).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The task id of a start request: a retried request (same tenant, same request id) answers the same task. */
export function taskIdFor(tenant: string, requestId: string): string {
  return deterministicId('task', tenant, requestId);
}

/** The command id of one attempt of a task (each retry runs as a new command). */
export function commandIdFor(taskId: string, attempt: number): string {
  return deterministicId('command', taskId, String(attempt));
}
