import { ValidationError } from '@handplane/kernel';
import type { TaskFilter } from './task-read';

/** Every status a task can have (DESIGN.md §3; `backgrounded` is the task's `background` flag). */
export const TASK_STATUSES = ['starting', 'running', 'stopping', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'] as const;
/** Shorthands accepted by `?status=`. */
const GROUPS: Record<string, readonly string[]> = {
  active: ['starting', 'running', 'stopping'],
  finished: ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'],
};
const MAX_LIMIT = 1000;

const single = (raw: unknown, name: string): string | undefined => {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw new ValidationError(`${name} must be given once`, [`${name}: repeated`]);
  return raw;
};

/**
 * `?status=running,stopping|active|finished&conversation=<id>&user=<userId>&overdue=true&awaiting=true|false&limit=N`
 * (`overdue` needs the clock and grace, given by the caller). An unknown status is a
 * 422; a conversation the caller cannot see (or that does not exist) simply matches nothing.
 */
export function parseTaskFilter(q: { status?: unknown; conversation?: unknown; user?: unknown; overdue?: unknown; awaiting?: unknown; limit?: unknown }, overdue?: { now: Date; graceMs: number }): TaskFilter {
  const status = single(q.status, 'status');
  const conversation = single(q.conversation, 'conversation');
  const user = single(q.user, 'user');
  const overdueRaw = single(q.overdue, 'overdue');
  if (overdueRaw !== undefined && overdueRaw !== 'true' && overdueRaw !== 'false') throw new ValidationError('overdue must be true or false', [`overdue: ${JSON.stringify(overdueRaw)}`]);
  const awaitingRaw = single(q.awaiting, 'awaiting');
  if (awaitingRaw !== undefined && awaitingRaw !== 'true' && awaitingRaw !== 'false') throw new ValidationError('awaiting must be true or false', [`awaiting: ${JSON.stringify(awaitingRaw)}`]);
  if (user !== undefined && user.length > 200) throw new ValidationError('user must be at most 200 characters', ['user: too long']);
  const limitRaw = single(q.limit, 'limit');
  let statuses: string[] | undefined;
  if (status) {
    statuses = [];
    for (const s of status.split(',').map((x) => x.trim())) {
      const expanded = GROUPS[s] ?? ((TASK_STATUSES as readonly string[]).includes(s) ? [s] : undefined);
      if (!expanded) throw new ValidationError(`unknown task status ${JSON.stringify(s)}`, [`status: one of ${[...TASK_STATUSES, ...Object.keys(GROUPS)].join(', ')}`]);
      statuses.push(...expanded);
    }
  }
  const limit = limitRaw === undefined ? 200 : /^\d{1,4}$/.test(limitRaw) ? Number(limitRaw) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) throw new ValidationError(`limit must be 1 to ${MAX_LIMIT}`, [`limit: ${JSON.stringify(limitRaw)}`]);
  return {
    ...(statuses ? { statuses } : {}),
    ...(conversation ? { conversationId: conversation } : {}),
    ...(user ? { userId: user } : {}),
    ...(overdueRaw === 'true' && overdue ? { overdue } : {}),
    ...(awaitingRaw !== undefined ? { awaiting: awaitingRaw === 'true' } : {}),
    limit,
  };
}
