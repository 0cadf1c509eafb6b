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
      receipt: { oneOf: [ref('TaskReceipt'), { type: 'null' }], description: 'how the task ended; null until it is terminal' },
      awaitingInput: {
        oneOf: [obj({ prompt: str, offset: int, attempt: int, since: str }, ['prompt', 'offset', 'attempt', 'since']), { type: 'null' }],
        description: 'set while the task runs stopped at a prompt with no input after it',
      },
    },
    ['taskId', 'commandId', 'conversationId', 'userId', 'command', 'status', 'background', 'attempt', 'epoch', 'exitCode', 'signal', 'resultState', 'outputBytes', 'createdAt', 'startedAt', 'finishedAt', 'deadlineAt', 'receipt', 'awaitingInput'],
  ),
  TaskReceipt: obj(
    {
      outcome: { enum: ['exited', 'killed', 'lost', 'not_started', 'unknown'] },
      status: { enum: TASK_STATUS.slice(3) },
      exitCode: nullable('integer'),
      signal: nullable('string'),
      requestedBy: {
        oneOf: [obj({ reason: { enum: ['user', 'deadline', 'stop_all', 'policy'] }, by: str, at: str, detail: str }, ['reason', 'by', 'at']), { type: 'null' }],
        description: 'the stop request in force (for `killed`: at whose request)',
      },
      summary: { type: 'string', description: 'one sentence: "exited with code 0", "killed by SIGTERM at the request of user bob", …' },
      evidence: obj(
        {
          runnerId: nullable('string'),
          epoch: int,
          attempt: int,
          startedAt: nullable('string'),
          finishedAt: str,
          outputBytes: int,
          resultState: { enum: ['readable', 'unavailable'] },
          exitReason: nullable('string'),
          startFailure: str,
        },
        ['runnerId', 'epoch', 'attempt', 'startedAt', 'finishedAt', 'outputBytes', 'resultState', 'exitReason'],
      ),
    },
    ['outcome', 'status', 'exitCode', 'signal', 'requestedBy', 'summary', 'evidence'],
  ),
  OverdueReport: obj({ at: str, graceMs: int, count: int, tasks: { type: 'array', items: ref('Task') } }, ['at', 'graceMs', 'count', 'tasks']),
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
  StdinWrite: obj({
    data: { type: 'string', description: 'the input (UTF-8 text, or base64 with `encoding: "base64"`); at most 64 KiB of bytes per call (413)' },
    encoding: { enum: ['utf8', 'base64'], default: 'utf8' },
    close: { type: 'boolean', default: false, description: 'close stdin after the data: the command reads end-of-file' },
    attempt: { type: 'integer', minimum: 0, description: 'the attempt the caller saw; another one answers 409' },
  }),
  StdinWritten: obj({ taskId: str, attempt: int, bytes: int, closed: { type: 'boolean' }, totalBytes: int }, ['taskId', 'attempt', 'bytes', 'closed', 'totalBytes']),
  StopAll: obj({ epoch: { type: 'integer', minimum: 0, description: 'the epoch the caller saw (default: the current one)' } }),
  StopAllAccepted: obj({ epoch: { type: 'integer', description: 'the epoch after the call' }, stopping: { type: 'array', items: str } }, ['epoch', 'stopping']),
  ApprovalDecision: obj({ decision: { enum: ['approve', 'reject'] } }, ['decision']),
  QuestionAnswer: obj({ text: { type: 'string', minLength: 1, description: 'at most 64 KiB' } }, ['text']),
  Ticket: obj({ ticket: str, expiresAt: { type: 'string', format: 'date-time' } }, ['ticket', 'expiresAt']),
  AuditEntry: obj(
    { source: { type: 'string', enum: ['conversation', 'task'] }, seq: int, time: { type: 'string', format: 'date-time' }, type: str, v: nullable('integer'), actor: nullable('string'), data: {} },
    ['source', 'seq', 'time', 'type', 'v', 'actor', 'data'],
  ),
  Run: obj(
    {
      runId: str,
      userId: str,
      trigger: { enum: ['message', 'task_event', 'answer', 'approval'] },
      triggerRef: { type: ['string', 'null'], description: 'the message, question, approval or task that started it' },
      status: { enum: ['running', 'completed', 'waiting', 'stopped', 'failed'] },
      detail: nullable('string'),
      startedAt: { type: 'string', format: 'date-time' },
      finishedAt: { type: ['string', 'null'], format: 'date-time' },
    },
    ['runId', 'userId', 'trigger', 'triggerRef', 'status', 'detail', 'startedAt', 'finishedAt'],
  ),
  TodoItem: obj(
    { id: str, content: str, status: { enum: ['pending', 'in_progress', 'completed'] }, taskIds: { type: 'array', items: str }, waitedOn: { type: 'boolean' }, runId: nullable('string') },
    ['id', 'content', 'status', 'taskIds', 'waitedOn', 'runId'],
  ),
  QueueEntry: obj(
    {
      seq: int,
      kind: { enum: ['message', 'answer', 'approval', 'task_event'] },
      itemId: { type: 'string', description: 'message, question or approval id; `<taskId>:<attempt>` for a task event' },
      userId: str,
      queuedAt: { type: 'string', format: 'date-time' },
      startedRunId: nullable('string'),
      startedSeq: nullable('integer'),
    },
    ['seq', 'kind', 'itemId', 'userId', 'queuedAt', 'startedRunId', 'startedSeq'],
  ),
  CommandAttempt: obj(
    {
      commandId: str,
      attempt: int,
      runnerId: nullable('string'),
      exitCode: nullable('integer'),
      signal: nullable('string'),
      endOffset: nullable('integer'),
      reason: nullable('string'),
      startedAt: nullable('string'),
      finishedAt: nullable('string'),
      resultState: { enum: ['result_pending', 'readable', 'delivered', 'unavailable'] },
      outputBytes: int,
      truncation: { oneOf: [obj({ droppedFrom: int, droppedTo: int, droppedBytes: int }, ['droppedFrom', 'droppedTo', 'droppedBytes']), { type: 'null' }] },
      deliveredTo: { type: ['string', 'null'], enum: ['agent', 'user', null] },
    },
    ['commandId', 'attempt', 'runnerId', 'exitCode', 'signal', 'endOffset', 'reason', 'startedAt', 'finishedAt', 'resultState', 'outputBytes', 'truncation', 'deliveredTo'],
  ),
  LogIndexEntry: obj(
    { kind: { enum: ['stdout', 'stderr', 'exit', 'truncated'] }, offset: int, bytes: { type: 'integer', description: 'chunk size; for `truncated` the bytes dropped; 0 for `exit`' }, logsSeq: int },
    ['kind', 'offset', 'bytes', 'logsSeq'],
  ),
  Health: obj({ status: str }, ['status']),
  Readiness: obj({ status: { enum: ['ready', 'not_ready'] }, checks: { type: 'array', items: obj({ name: str, ok: { type: 'boolean' }, reason: str }, ['name', 'ok']) } }, ['status', 'checks']),
  DevTokenRequest: obj({ userId: str, tenant: str, name: str }, ['userId', 'tenant']),
  DevToken: obj({ token: str, expiresAt: str }, ['token', 'expiresAt']),
  ProjectionStatus: obj(
    {
      name: str,
      stream: str,
      position: int,
      rows: int,
      rebuild: {
        type: ['object', 'null'],
        properties: { status: { enum: ['running', 'done', 'failed'] }, seq: int, rows: int, startedAt: str, finishedAt: { type: ['string', 'null'] }, seconds: { type: ['number', 'null'] }, error: { type: ['string', 'null'] } },
      },
    },
    ['name', 'stream', 'position', 'rows', 'rebuild'],
  ),
  ProjectionList: { type: 'array', items: { $ref: '#/components/schemas/ProjectionStatus' } },
  RebuildStarted: obj({ name: str, status: { enum: ['running'] } }, ['name', 'status']),
};

export { ref };
