import type { z } from 'zod';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { conversationEventSchema } from './conversation.schemas';
import { sandboxCommandEventSchema, taskEventSchema } from './task.schemas';

/** Raised for a message that is not JSON, has an unknown type or version, or fails its schema. */
export class MalformedEvent extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MalformedEvent';
  }
}

/**
 * Upcasters turn an old version into the current one on read; stored events are never rewritten.
 * Key: `<type>@<v>`. Each returns the raw object of the next version.
 */
export type Upcaster = (raw: { type: string; v: number; data: unknown; metadata: unknown }) => { type: string; v: number; data: unknown; metadata: unknown };
const upcasters: Record<string, Upcaster> = {};

/** Registers an upcaster from `type@v` to `v + 1`. */
export function registerUpcaster(type: string, fromVersion: number, up: Upcaster): void {
  upcasters[`${type}@${fromVersion}`] = up;
}

function upcast(raw: unknown): unknown {
  let cur = raw as { type: string; v: number; data: unknown; metadata: unknown };
  for (let guard = 0; guard < 32 && cur && typeof cur === 'object'; guard++) {
    const up = upcasters[`${cur.type}@${cur.v}`];
    if (!up) break;
    cur = up(cur);
  }
  return cur;
}

function decoder<E>(schema: z.ZodTypeAny, what: string) {
  return (bytes: Uint8Array | string): E & { v: number } => {
    let raw: unknown;
    try {
      raw = JSON.parse(typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8'));
    } catch (cause) {
      throw new MalformedEvent(`${what}: not JSON`, { cause });
    }
    let current: unknown;
    try {
      current = upcast(raw);
    } catch (cause) {
      throw new MalformedEvent(`${what}: cannot upcast ${JSON.stringify((raw as { type?: unknown })?.type)}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    const parsed = schema.safeParse(current);
    if (!parsed.success) {
      const t = (raw as { type?: unknown })?.type;
      throw new MalformedEvent(`${what}: invalid event ${JSON.stringify(t)}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    return parsed.data as E & { v: number };
  };
}

/** Decodes (and upcasts, and validates) a TASKS `task.*` message. */
export const decodeTaskEvent = decoder<TaskEvent>(taskEventSchema, 'task event');
/** Decodes a TASKS `cmd.*` message. */
export const decodeSandboxCommandEvent = decoder<SandboxCommandEvent>(sandboxCommandEventSchema, 'sandbox command event');
/** Decodes a CONV message. */
export const decodeConversationEvent = decoder<ConversationEvent>(conversationEventSchema, 'conversation event');

/** Version written for event types not listed in `CURRENT_VERSIONS`. */
export const CURRENT_VERSION = 1;

/** Event types whose current version is past 1 (each older version has an upcaster). */
export const CURRENT_VERSIONS: Readonly<Record<string, number>> = { 'task.stopping': 2 };

/** The version `encodeEvent` writes for `type`. */
export function currentVersionOf(type: string): number {
  return CURRENT_VERSIONS[type] ?? CURRENT_VERSION;
}

/** Encodes a domain event for the wire at its current version. */
export function encodeEvent(event: TaskEvent | SandboxCommandEvent | ConversationEvent): Uint8Array {
  return Buffer.from(JSON.stringify({ type: event.type, v: currentVersionOf(event.type), data: event.data, metadata: event.metadata }));
}
