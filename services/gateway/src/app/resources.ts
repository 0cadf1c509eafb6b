import type { Pool } from 'pg';
import type { Clock } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import type { EventStore, Logger, Nats } from '@handplane/platform';

/** Who is calling, as proven by the bearer token. */
export interface Principal {
  readonly userId: string;
  readonly tenant: string;
  readonly name?: string;
  /** When the credential ends (unix seconds): an event stream opened with it ends then too. */
  readonly expiresAt?: number;
}

/** What the gateway's application functions need: plain resources, no framework. */
export interface GatewayResources {
  readonly nats: Nats;
  readonly pool: Pool;
  readonly store: EventStore;
  readonly topology: Topology;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly logger: Logger;
  /** How long a write waits for its read model before answering 503 (read-your-writes). */
  readonly projectionWaitMs: number;
  /** How long the gateway waits for the coordinator to answer a request. */
  readonly rpcTimeoutMs: number;
  /** How long past its deadline an unfinished task counts as overdue (OVERDUE_GRACE_MS; default 60 s). */
  readonly overdueGraceMs?: number;
}

/** Name of the projection the gateway hosts (and waits for after its own appends). */
export const CONVERSATIONS_PROJECTION = 'conversations';
/** Name of the projection the coordinator hosts. */
export const TASKS_PROJECTION = 'tasks';
