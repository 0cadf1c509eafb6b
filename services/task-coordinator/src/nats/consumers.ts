import { decodeSandboxCommandEvent, decodeTaskEvent } from '@handplane/contracts';
import { runDurableConsumer, type Nats, type RunningConsumer } from '@handplane/platform';
import type { CompletionOutbox } from '../app/completion-outbox';
import type { CoordinatorDeps } from '../app/deps';
import { dispatchTask } from '../app/dispatch';
import { mirrorTaskEvent } from '../app/notices';
import { settleTask } from '../app/settle-task';

/** Deliveries of one task message before the consumer drops it (~8 h at the 30 s backoff cap). */
export const DISPATCH_CONSUMER_MAX_DELIVER = 1000;

/** Durable consumer names (shared by every replica, namespaced by the topology). */
export const DURABLES = { tasks: 'coordinator-tasks', commands: 'coordinator-commands', notices: 'coordinator-notices' } as const;

/**
 * The coordinator's three durable consumers on TASKS. Each handler decodes (a malformed message is
 * terminated by the consumer and never blocks the next) and calls one application function.
 */
export async function startConsumers(nats: Nats, d: CoordinatorDeps, outbox: CompletionOutbox): Promise<RunningConsumer[]> {
  const { t, logger } = d;
  const started: RunningConsumer[] = [];
  try {
    started.push(
      await runDurableConsumer(nats, {
        stream: t.streams.TASKS,
        durable: t.durable(DURABLES.tasks),
        filterSubject: t.all.task,
        logger,
        // Dispatch gives up on runners after dispatchMaxDeliver (FailStart); the consumer retries far
        // longer so that a give-up that could not be recorded (NATS away) is recorded later.
        maxDeliver: DISPATCH_CONSUMER_MAX_DELIVER,
        // Exec calls to different runners go on in parallel; each task's own history orders its decisions.
        concurrency: 4,
        handler: async (m) => {
          const e = decodeTaskEvent(m.data);
          if (e.type !== 'TaskRegistered' && e.type !== 'TaskRetried' && e.type !== 'TaskStartFailed') return;
          await dispatchTask(d, e.data.taskId, { count: m.info.deliveryCount, max: d.settings.dispatchMaxDeliver }, e);
        },
      }),
    );
    started.push(
      await runDurableConsumer(nats, {
        stream: t.streams.TASKS,
        durable: t.durable(DURABLES.commands),
        filterSubject: t.all.cmd,
        logger,
        // Settling is quick; a message held by a coordinator that died comes back sooner (reconciliation covers the gap too).
        ackWaitMs: 10_000,
        concurrency: 4,
        handler: async (m) => void (await settleTask(d, decodeSandboxCommandEvent(m.data))),
      }),
    );
    started.push(
      await runDurableConsumer(nats, {
        stream: t.streams.TASKS,
        durable: t.durable(DURABLES.notices),
        filterSubject: t.all.task,
        logger,
        // One at a time: a conversation sees its task notices in the order of the log.
        concurrency: 1,
        ackWaitMs: 10_000,
        handler: (m) => mirrorTaskEvent(d, outbox, { seq: m.seq, subject: m.subject, event: decodeTaskEvent(m.data) }),
      }),
    );
    return started;
  } catch (e) {
    await Promise.allSettled(started.map((c) => c.stop()));
    throw e;
  }
}
