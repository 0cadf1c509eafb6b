import { registerUpcaster } from './codec';
import { taskStoppingV1 } from './conversation.schemas';

/**
 * Every upcaster of the wire events, registered when the contracts load. An upcaster turns the raw
 * object of version n into version n + 1; the stored message is never rewritten.
 */

// task.stopping v1 → v2: who asked is the event's actor (the coordinator copied it from the stop
// request); the attempt was not recorded.
registerUpcaster('task.stopping', 1, (raw) => {
  const d = taskStoppingV1.parse(raw.data);
  const actor = (raw.metadata as { actor?: unknown } | undefined)?.actor;
  return { ...raw, v: 2, data: { ...d, attempt: null, requestedBy: typeof actor === 'string' ? actor : 'unknown' } };
});
