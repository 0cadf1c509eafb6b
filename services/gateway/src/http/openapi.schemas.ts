/** JSON Schemas of the public API's bodies and answers (OpenAPI 3.1 components). */
const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const nullable = (t: string) => ({ type: [t, 'null'] });
const obj = (properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  additionalProperties: false,
  ...extra,
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const TASK_STATUS = ['starting', 'running', 'stopping', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

export const SCHEMAS: Record<string, unknown> = {
  Error: obj({ error: obj({ code: str, message: str, issues: { type: 'array', items: str } }, ['code', 'message']) }, ['error']),
  Id: obj({ id: str }, ['id']),
  CreateConversation: obj({ title: { type: 'string', maxLength: 200 } }),
  AddMember: obj({ userId: { type: 'string', pattern: '^[^\\s\\u0000]{1,200}$' } }, ['userId']),
  PostMessage: obj({ text: { type: 'string', minLength: 1, description: 'at most 256 KiB' }, clientMessageId: { type: 'string', minLength: 1, maxLength: 200 } }, ['text']),
  MessageAccepted: obj({ messageId: str, disposition: { enum: ['started', 'steered', 'queued'] } }, ['messageId', 'disposition']),
  StartCommand: obj(
    {
      command: { type: 'string', minLength: 1, description: 'at most 64 KiB, no NUL' },
      cwd: { type: 'string', maxLength: 4096, description: 'relative to the workspace, no ".."' },
      env: { type: 'object', propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }, additionalProperties: str, maxProperties: 256 },
      timeoutMs: { type: 'integer', minimum: 1 },
    },
    ['command'],
  ),
  CommandStarted: obj({ taskId: str, commandId: str }, ['taskId', 'commandId']),
  Task: obj(
    {
      taskId: str,
      commandId: str,
      conversationId: str,
      userId: str,
      command: str,
      status: { enum: TASK_STATUS },
      background: { type: 'boolean' },
      attempt: int,
      epoch: int,
      exitCode: nullable('integer'),
      signal: nullable('string'),
      resultState: { enum: ['result_pending', 'readable', 'delivered', 'unavailable'] },
      outputBytes: int,
      createdAt: str,
      startedAt: nullable('string'),
      finishedAt: nullable('string'),
      deadlineAt: nullable('string'),
    },
    ['taskId', 'commandId', 'conversationId', 'userId', 'command', 'status', 'background', 'attempt', 'epoch', 'exitCode', 'signal', 'resultState', 'outputBytes', 'createdAt', 'startedAt', 'finishedAt', 'deadlineAt'],
  ),
  Conversation: obj(
    {
      id: str,
      title: str,
      members: { type: 'array', items: obj({ userId: str, addedAt: str }, ['userId', 'addedAt']) },
      run: obj({ status: { enum: ['idle', 'running', 'waiting'] }, runId: str, userId: str }, ['status']),
      todos: { type: 'array', items: obj({ id: str, content: str, status: { enum: ['pending', 'in_progress', 'completed'] }, taskIds: { type: 'array', items: str } }) },
      waitForTasks: { type: 'array', items: str },
      epoch: int,
      queue: { type: 'array', items: obj({ kind: str, taskId: str, userId: str }, ['kind', 'userId']) },
      approvals: { type: 'array', items: obj({ approvalId: str, runId: nullable('string'), command: str, reason: str, requestedAt: str }) },
      questions: { type: 'array', items: obj({ questionId: str, runId: nullable('string'), text: str, askedAt: str }) },
    },
    ['id', 'title', 'members', 'run', 'todos', 'waitForTasks', 'epoch', 'queue', 'approvals', 'questions'],
  ),
  StopTask: obj({ attempt: { type: 'integer', minimum: 0, description: 'the attempt the caller saw; another one answers 409' } }),
  TaskStopping: obj({ status: { enum: ['stopping', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'] }, attempt: int }, ['status', 'attempt']),
  StopAll: obj({ epoch: { type: 'integer', minimum: 0, description: 'the epoch the caller saw (default: the current one)' } }),
  StopAllAccepted: obj({ epoch: { type: 'integer', description: 'the epoch after the call' }, stopping: { type: 'array', items: str } }, ['epoch', 'stopping']),
  ApprovalDecision: obj({ decision: { enum: ['approve', 'reject'] } }, ['decision']),
  QuestionAnswer: obj({ text: { type: 'string', minLength: 1, description: 'at most 64 KiB' } }, ['text']),
  Ticket: obj({ ticket: str, expiresAt: { type: 'string', format: 'date-time' } }, ['ticket', 'expiresAt']),
  AuditEntry: obj({ seq: int, time: { type: 'string', format: 'date-time' }, type: str, actor: nullable('string'), data: {} }, ['seq', 'time', 'type', 'actor', 'data']),
  Health: obj({ status: str }, ['status']),
  Readiness: obj({ status: { enum: ['ready', 'not_ready'] }, checks: { type: 'array', items: obj({ name: str, ok: { type: 'boolean' }, reason: str }, ['name', 'ok']) } }, ['status', 'checks']),
  DevTokenRequest: obj({ userId: str, tenant: str, name: str }, ['userId', 'tenant']),
  DevToken: obj({ token: str, expiresAt: str }, ['token', 'expiresAt']),
};

export { ref };
