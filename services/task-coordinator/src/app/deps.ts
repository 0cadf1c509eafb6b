import type { Topology } from '@handplane/contracts';
import type { Clock } from '@handplane/kernel';
import type { EventStore, Logger, Nats, RunnerRegistry } from '@handplane/platform';
import type { Pool } from 'pg';
import type { Budgets } from './budgets';
import type { ConversationTenants } from './conversation-tenant';
import type { Placements } from './placements';
import type { RunnerPort } from './runner-port';
import type { TaskRepository } from './task-repository';

/** Who the coordinator's own decisions are attributed to. */
export const SYSTEM_ACTOR = 'system:task-coordinator';

/** Settings the application functions need (from the service config). */
export interface CoordinatorSettings {
  readonly foregroundWindowMs: number;
  readonly defaultDeadlineMs: number;
  readonly maxDeadlineMs: number;
  readonly runnerLostAfterMs: number;
  /** Deliveries of a TaskRegistered before the start is given up as "no runner available". */
  readonly dispatchMaxDeliver: number;
  /** SIGTERM → SIGKILL grace the runner applies to a stop (STOP_GRACE_MS). */
  readonly stopGraceMs: number;
  /** Attempts per task (RETRY_MAX_ATTEMPTS; 1 = no retry). */
  readonly retryMaxAttempts: number;
  /**
   * How long a task stopped before any runner took it waits for an Exec that may still be on its way
   * before it ends as never run (an Exec that lands later is killed; see dispatch and reconcile).
   */
  readonly abandonStartAfterMs: number;
  /** Per-conversation and per-tenant budgets (BUDGET_CONV_*, BUDGET_TENANT_*; 0 = no limit). */
  readonly budgets: Budgets;
  /** How long past its deadline an unfinished task is reported as overdue (OVERDUE_GRACE_MS). */
  readonly overdueGraceMs: number;
}

/** The resources of the coordinator's application functions; each takes the few it uses. */
export interface CoordinatorDeps {
  readonly t: Topology;
  readonly nats: Nats;
  readonly store: EventStore;
  readonly tasks: TaskRepository;
  readonly pool: Pool;
  /**
   * Connections for advisory locks (`withLock`), apart from `pool`: a lock held while its work runs
   * never takes a client the work (or any other handler) needs. Tests may leave it out (then `pool`).
   */
  readonly lockPool?: Pool;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: RunnerRegistry;
  readonly runners: RunnerPort;
  readonly settings: CoordinatorSettings;
  /** Where this instance just placed commands, and which runners just failed an Exec (dispatch); optional in tests. */
  readonly placements?: Placements;
  /** Each conversation's tenant, from its `conversation.created` in CONV (start-task checks it). */
  readonly conversations: ConversationTenants;
}
