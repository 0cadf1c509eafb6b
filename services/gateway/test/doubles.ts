import type { z } from 'zod';
import { stopAllRequestSchema, stopTaskRequestSchema, type StopAllRequest, type StopTaskRequest } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import type { Harness } from './harness';

/**
 * Answers one coordinator request subject on the real NATS with `answer(request)` and records what
 * it was asked: a stand-in for the task coordinator, which these gateway tests do not start.
 */
export function responder<S extends z.ZodTypeAny>(h: Harness, subject: string, schema: S, answer: (req: z.infer<S>) => Promise<unknown> | unknown) {
  const seen: z.infer<S>[] = [];
  const sub = h.nats.nats.nc.subscribe(subject, {
    callback: (_err, msg) => {
      const req = schema.parse(JSON.parse(Buffer.from(msg.data).toString('utf8')));
      seen.push(req);
      void Promise.resolve(answer(req)).then((reply) => msg.respond(Buffer.from(JSON.stringify(reply))));
    },
  });
  return { seen, stop: () => sub.unsubscribe() };
}

export const stopTaskResponder = (h: Harness, answer: (req: StopTaskRequest) => unknown) => responder(h, h.nats.topology.rpc.stopTask, stopTaskRequestSchema, answer);

/** Like the coordinator: appends `epoch.ended` to the conversation, then answers. */
export const stopAllResponder = (h: Harness, stopping: string[] = []) =>
  responder(h, h.nats.topology.rpc.stopAll, stopAllRequestSchema, async (req: StopAllRequest) => {
    const event: ConversationEvent = {
      type: 'epoch.ended',
      data: { epoch: req.epoch, nextEpoch: req.epoch + 1, stoppedTaskIds: stopping, stoppedTasks: stopping.map((taskId) => ({ taskId, attempt: 1 })), by: req.userId },
      metadata: { at: new Date().toISOString(), actor: req.userId },
    };
    await h.store.publish(h.nats.topology.conv(req.conversationId), event, `epoch-ended:${req.conversationId}:${req.epoch}`);
    return { ok: true, epoch: req.epoch + 1, stopping };
  });

let n = 0;

/** Registers a task in the coordinator's `tasks` read model, as the coordinator would. */
export async function insertTask(h: Harness, t: { conversationId: string; tenant: string; userId: string; status?: string; command?: string; taskId?: string }): Promise<string> {
  const taskId = t.taskId ?? `task-${process.pid}-${++n}`;
  await h.pool.query(
    `INSERT INTO tasks (task_id, command_id, conversation_id, tenant, user_id, origin, command, status, attempt, epoch, created_at)
     VALUES ($1, $2, $3, $4, $5, 'user', $6, $7, 1, 1, now() + ($8 || ' milliseconds')::interval)`,
    [taskId, `cmd-${taskId}`, t.conversationId, t.tenant, t.userId, t.command ?? 'echo hi', t.status ?? 'running', String(n)],
  );
  return taskId;
}

/** Appends a conversation event (as the runtime or coordinator would) and returns its stream sequence. */
export async function publishConv(h: Harness, conversationId: string, event: ConversationEvent, msgId: string): Promise<number> {
  return (await h.store.publish(h.nats.topology.conv(conversationId), event, msgId)).seq;
}

/** Waits until the gateway's `conversations` projection has applied `seq`. */
export async function projected(h: Harness, seq: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const r = await h.pool.query<{ seq: string }>(`SELECT seq FROM projector_positions WHERE name = 'conversations'`);
    if (Number(r.rows[0]?.seq ?? 0) >= seq) return;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`the conversations projection never reached ${seq}`);
}
