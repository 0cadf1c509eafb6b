import type { ValidateTaskWaitRequest } from '@handplane/contracts';
import { isTerminalStatus } from '@handplane/domain';
import type { CoordinatorDeps } from './deps';
import { checkConditions, registerConditions } from './wait-conditions';

/** The answer for one id. */
export interface WaitCheck {
  taskId: string;
  valid: boolean;
  reason?: string;
  status?: string;
}

const UNKNOWN = 'unknown task';
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;

async function check(d: Pick<CoordinatorDeps, 'tasks'>, conversationId: string, taskId: string): Promise<WaitCheck> {
  // Ids that cannot name a subject cannot name a task.
  if (!SUBJECT_TOKEN.test(taskId)) return { taskId, valid: false, reason: UNKNOWN };
  const { state } = await d.tasks.load(taskId);
  // Another conversation's task reads exactly like a missing one: never reveal that it exists.
  if (state.status === 'none' || state.task.conversationId !== conversationId) return { taskId, valid: false, reason: UNKNOWN };
  if (isTerminalStatus(state.status)) return { taskId, valid: false, reason: `task already finished (${state.status})`, status: state.status };
  return { taskId, valid: true, status: state.status };
}

/**
 * `validate_task_wait` (G5): a wait is valid only if every id exists, belongs to the conversation
 * and is not terminal. The answer is read from the log (not the projection), so a task finished a
 * moment ago is never accepted as a wait target.
 */
export async function validateTaskWait(
  d: Pick<CoordinatorDeps, 'tasks' | 'pool' | 'clock'>,
  req: ValidateTaskWaitRequest,
): Promise<{ ok: true; valid: boolean; results: WaitCheck[] }> {
  const ids = [...new Set(req.taskIds)];
  const results: WaitCheck[] = [];
  // A few reads at a time: up to 100 ids, each its own subject.
  for (let i = 0; i < ids.length; i += 8) results.push(...(await Promise.all(ids.slice(i, i + 8).map((id) => check(d, req.conversationId, id)))));
  const conditions = req.conditions ?? [];
  if (conditions.length === 0) return { ok: true, valid: results.every((r) => r.valid), results };
  const checked = checkConditions(req, results);
  const valid = checked.every((r) => r.valid);
  if (valid) await registerConditions(d, req);
  return { ok: true, valid, results: checked };
}
