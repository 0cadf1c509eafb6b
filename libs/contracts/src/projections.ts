import { z } from 'zod';

/** Where a read model comes from and which service hosts its projector (and answers its rebuilds). */
export interface ProjectionInfo {
  readonly name: string;
  readonly stream: 'CONV' | 'TASKS' | 'LOGS';
  readonly tables: readonly string[];
  readonly host: 'gateway' | 'task-coordinator';
}

/**
 * Every Postgres read model, by the name `handplane projections rebuild <name>` takes. The
 * projections themselves live with their hosts; tests check that each matches this list.
 */
export const PROJECTIONS: readonly ProjectionInfo[] = [
  { name: 'conversations', stream: 'CONV', tables: ['conversations', 'conversation_members', 'conversation_prompts'], host: 'gateway' },
  { name: 'runs', stream: 'CONV', tables: ['runs'], host: 'gateway' },
  { name: 'todos', stream: 'CONV', tables: ['todos'], host: 'gateway' },
  { name: 'queues', stream: 'CONV', tables: ['conversation_queue'], host: 'gateway' },
  { name: 'task-prompts', stream: 'CONV', tables: ['task_prompts'], host: 'gateway' },
  { name: 'commands', stream: 'TASKS', tables: ['commands'], host: 'gateway' },
  { name: 'command-log-index', stream: 'LOGS', tables: ['command_log_index'], host: 'gateway' },
  { name: 'tasks', stream: 'TASKS', tables: ['tasks'], host: 'task-coordinator' },
  { name: 'coordinator-epochs', stream: 'CONV', tables: ['conversation_epochs'], host: 'task-coordinator' },
];

/** The names, for messages that list the valid ones. */
export const PROJECTION_NAMES: readonly string[] = PROJECTIONS.map((p) => p.name);

/** Request subject of a projection's rebuild (served by its host, a queue group per projection). */
export function projectionRebuildSubject(prefix: string, name: string): string {
  return `${prefix ? `${prefix}.` : ''}rpc.projections.rebuild.${name}`;
}

/** The host's answer: the rebuild has the lock and runs (progress in `GET /v1/admin/projections`). */
export const projectionRebuildReplySchema = z.union([
  z.object({ ok: z.literal(true), name: z.string(), status: z.literal('running') }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
]);
export type ProjectionRebuildReply = z.infer<typeof projectionRebuildReplySchema>;
