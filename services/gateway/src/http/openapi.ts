import { ref, SCHEMAS } from './openapi.schemas';

/**
 * The OpenAPI 3.1 description of everything the gateway serves (GET /openapi.json). Written by
 * hand next to the routes; a test compares it with the routes Nest actually registers.
 */
type Op = {
  summary: string;
  tags: string[];
  auth?: 'bearer' | 'none' | 'stream';
  params?: string[];
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
  ok: [number, string | null, string?];
  errors?: number[];
  description?: string;
};

const ERROR_TEXT: Record<number, string> = {
  400: 'malformed JSON',
  401: 'missing, invalid or expired credential',
  403: 'not allowed',
  404: 'unknown, another tenant’s, or not a member (never says which)',
  409: 'conflict with the current state',
  413: 'body larger than 1 MiB',
  422: 'invalid input (`issues` lists each problem)',
  429: 'rate limited; see Retry-After (seconds)',
  503: 'a dependency cannot answer now; retry',
};

const json = (schema: unknown) => ({ 'application/json': { schema } });

function operation(o: Op) {
  const auth = o.auth ?? 'bearer';
  const errors = o.errors ?? [];
  const codes = auth === 'none' ? errors : [...new Set([401, 429, ...errors])].sort();
  const [status, schema, contentType] = o.ok;
  const okContent = schema === null ? undefined : contentType ? { [contentType]: { schema: { type: 'string', ...(contentType === 'application/octet-stream' ? { format: 'binary' } : {}) } } } : json(ref(schema));
  return {
    summary: o.summary,
    tags: o.tags,
    ...(o.description ? { description: o.description } : {}),
    security: auth === 'none' ? [] : auth === 'stream' ? [{ bearer: [] }, { sseTicket: [] }] : [{ bearer: [] }],
    parameters: [
      ...(o.params ?? []).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' } })),
      ...Object.entries(o.query ?? {}).map(([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } })),
      ...Object.entries(o.headers ?? {}).map(([name, description]) => ({ name, in: 'header', required: false, description, schema: { type: 'string' } })),
    ],
    ...(o.body ? { requestBody: { required: false, content: json(ref(o.body)) } } : {}),
    responses: {
      [String(status)]: { description: 'success', ...(okContent ? { content: okContent } : {}) },
      ...Object.fromEntries(
        codes.map((c) => [String(c), { description: ERROR_TEXT[c] ?? 'error', content: json(ref('Error')), ...(c === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' } } } } : {}) }]),
      ),
    },
  };
}

const IDEMPOTENCY = { 'Idempotency-Key': 'a retried request with the same key answers the same resource' };
const list = (item: string) => ({ type: 'array', items: ref(item) });

const PATHS: Record<string, Record<string, Op>> = {
  '/v1/conversations': { post: { summary: 'Create a conversation (the creator is a member)', tags: ['conversations'], body: 'CreateConversation', headers: IDEMPOTENCY, ok: [201, 'Id'], errors: [400, 413, 422, 503] } },
  '/v1/conversations/{id}': { get: { summary: 'A conversation: members, run, todos, epoch, queue, pending approvals and questions', tags: ['conversations'], params: ['id'], ok: [200, 'Conversation'], errors: [404, 503] } },
  '/v1/conversations/{id}/members': { post: { summary: 'Add a member of the caller’s tenant', tags: ['conversations'], params: ['id'], body: 'AddMember', ok: [204, null], errors: [400, 404, 413, 422, 503] } },
  '/v1/conversations/{id}/messages': { post: { summary: 'Post a message to the agent', tags: ['conversations'], params: ['id'], body: 'PostMessage', ok: [202, 'MessageAccepted'], errors: [400, 404, 413, 422, 503] } },
  '/v1/conversations/{id}/commands': {
    post: { summary: 'Run a command as a person (no model)', tags: ['tasks'], params: ['id'], body: 'StartCommand', headers: IDEMPOTENCY, ok: [201, 'CommandStarted'], errors: [400, 404, 409, 413, 422, 503] },
  },
  '/v1/conversations/{id}/tasks': { get: { summary: 'The conversation’s tasks', tags: ['tasks'], params: ['id'], ok: [200, 'TaskList'], errors: [404, 503] } },
  '/v1/conversations/{id}/stop-all': {
    post: { summary: 'End the conversation’s epoch: stop every unfinished task and the active run', tags: ['tasks'], params: ['id'], body: 'StopAll', ok: [202, 'StopAllAccepted'], errors: [400, 404, 409, 422, 503] },
  },
  '/v1/conversations/{id}/approvals/{approvalId}': {
    post: { summary: 'Approve or reject what the agent asked to do', tags: ['conversations'], params: ['id', 'approvalId'], body: 'ApprovalDecision', ok: [204, null], errors: [400, 404, 409, 422, 503] },
  },
  '/v1/conversations/{id}/questions/{questionId}/answer': {
    post: { summary: 'Answer the agent’s question', tags: ['conversations'], params: ['id', 'questionId'], body: 'QuestionAnswer', ok: [204, null], errors: [400, 404, 409, 422, 503] },
  },
  '/v1/conversations/{id}/events': {
    get: {
      summary: 'The conversation’s events as Server-Sent Events',
      description:
        'Each event has `id` (the stream sequence), `event` (its type) and JSON `data`; a `: ping` comment comes every SSE_HEARTBEAT_MS. Resume with `Last-Event-ID` (or `?after=`): nothing is lost or repeated. The stream ends when the credential expires and when the client falls too far behind; reconnect with Last-Event-ID. Browsers use `?ticket=` (POST …/events/ticket); bearer tokens are never accepted in the URL.',
      tags: ['events'],
      auth: 'stream',
      params: ['id'],
      query: { after: 'resume after this stream sequence', ticket: 'a ticket from POST …/events/ticket (EventSource cannot send headers)' },
      headers: { 'Last-Event-ID': 'resume after this stream sequence (wins over ?after=)' },
      ok: [200, null, 'text/event-stream'],
      errors: [404, 422, 503],
    },
  },
  '/v1/conversations/{id}/events/ticket': {
    post: { summary: 'A 60 s ticket that opens this conversation’s event stream for the caller', tags: ['events'], params: ['id'], ok: [201, 'Ticket'], errors: [404, 503] },
  },
  '/v1/conversations/{id}/audit': {
    get: {
      summary: 'The conversation’s events from the log, in order',
      description:
        'CONV events, upcast to their current version (`v` says the version as stored); with `include=tasks` each task’s own events (TASKS: registration, stop requests with who asked, signals, exit, result) are merged in by time. Pages: `X-Next-After` (a CONV sequence) is set when more follow.',
      tags: ['conversations'],
      params: ['id'],
      query: { after: 'start after this stream sequence', limit: '1 to 5000 (default 1000)', include: '`tasks` to merge in the task events' },
      ok: [200, 'AuditLog'],
      errors: [404, 422, 503],
    },
  },
  '/v1/conversations/{id}/runs': {
    get: {
      summary: 'The runs of the agent (read model `runs`), oldest first',
      description: 'Ordered by the CONV sequence of each run’s `run.started`. Pages: `X-Next-After` (that sequence) is set when more follow; pass it as `after`.',
      tags: ['conversations'],
      params: ['id'],
      query: { after: 'start after this CONV sequence (default 0)', limit: '1 to 1000 (default 200)' },
      ok: [200, 'RunList'],
      errors: [404, 422, 503],
    },
  },
  '/v1/conversations/{id}/todos': {
    get: { summary: 'The conversation’s current todo list (read model `todos`), in order', tags: ['conversations'], params: ['id'], ok: [200, 'TodoList'], errors: [404, 503] },
  },
  '/v1/conversations/{id}/queue': {
    get: {
      summary: 'What was queued for the agent (read model `conversation_queue`) and the run each item started, by CONV sequence',
      description: 'Items consumed without a run of their own (steering messages, results read early) never show a run here. Pages: `X-Next-After` (a CONV sequence) is set when more follow; pass it as `after`.',
      tags: ['conversations'],
      params: ['id'],
      query: { pending: '`true`: only items no run has started yet; `false` (default): all', after: 'start after this CONV sequence', limit: '1 to 1000 (default 500)' },
      ok: [200, 'QueueList'],
      errors: [404, 422, 503],
    },
  },
  '/v1/tasks': {
    get: {
      summary: 'Every task the caller may see (member conversations of their tenant), newest first',
      tags: ['tasks'],
      query: {
        status: 'comma-separated statuses, or `active` / `finished`',
        conversation: 'only this conversation',
        user: 'only tasks started by this user',
        overdue: '`true`: only unfinished tasks past their deadline plus OVERDUE_GRACE_MS',
        awaiting: '`true`: only running tasks stopped at a prompt with no input after it (`awaitingInput` set); `false`: the others',
        limit: '1 to 1000 (default 200)',
      },
      ok: [200, 'TaskList'],
      errors: [422, 503],
    },
  },
  '/v1/tasks/overdue': {
    get: { summary: 'The overdue report: unfinished tasks past their deadline plus the grace, and their count', tags: ['tasks'], ok: [200, 'OverdueReport'], errors: [503] },
  },
  '/v1/tasks/{taskId}': { get: { summary: 'A task', tags: ['tasks'], params: ['taskId'], ok: [200, 'Task'], errors: [404, 503] } },
  '/v1/tasks/{taskId}/output/follow': {
    get: {
      summary: 'The task’s output live, as Server-Sent Events',
      description:
        'Events: `chunk` {offset, stream, data (base64, exact bytes)}, `truncated` {droppedFrom, droppedTo, droppedBytes}, `end` {nextOffset, exit, complete} (last). Each id is the byte offset reached: resume with `Last-Event-ID`. `: ping` comments keep proxies open.',
      tags: ['tasks'],
      params: ['taskId'],
      query: { offset: 'start at this byte offset (default 0)' },
      headers: { 'Last-Event-ID': 'resume at this byte offset (wins over ?offset=)' },
      ok: [200, null, 'text/event-stream'],
      errors: [404, 422, 503],
    },
  },
  '/v1/tasks/{taskId}/audit': {
    get: { summary: 'The task’s own events (every attempt), upcast, with who and when', tags: ['tasks'], params: ['taskId'], ok: [200, 'AuditLog'], errors: [404, 503] },
  },
  '/v1/tasks/{taskId}/output': {
    get: {
      summary: 'Raw output bytes from an offset',
      description: 'Headers: `X-Next-Offset`, `X-Result-State`, `X-Output-Complete` (true only when every byte has been read), `X-Output-Truncated: <from>-<to>` when the output cap dropped that byte range (a read inside it answers no bytes and `X-Next-Offset: <to>`).',
      tags: ['tasks'],
      params: ['taskId'],
      query: { offset: 'byte offset (default 0)' },
      ok: [200, null, 'application/octet-stream'],
      errors: [404, 422, 503],
    },
  },
  '/v1/tasks/{taskId}/commands': {
    get: { summary: 'Every attempt of the task (read model `commands`), by attempt', tags: ['tasks'], params: ['taskId'], ok: [200, 'CommandList'], errors: [404, 503] },
  },
  '/v1/tasks/{taskId}/commands/{commandId}/log-index': {
    get: {
      summary: 'Where one attempt’s output chunks, truncation marker and exit record sit in LOGS (read model `command_log_index`), by offset then kind',
      description:
        'Without `after`, from the first row (offset 0); with `after=N`, the rows at offsets greater than N. A page never splits one offset (it may hold up to 3 rows over `limit`); `X-Next-After` (the last offset) is set when more follow. 404 when the command is not an attempt of this task.',
      tags: ['tasks'],
      params: ['taskId', 'commandId'],
      query: { after: 'only rows at byte offsets greater than this', limit: '1 to 5000 (default 1000)' },
      ok: [200, 'LogIndex'],
      errors: [404, 422, 503],
    },
  },
  '/v1/tasks/{taskId}/stop': {
    post: { summary: 'Stop a task (fenced by `attempt` when given)', tags: ['tasks'], params: ['taskId'], body: 'StopTask', ok: [202, 'TaskStopping'], errors: [400, 404, 409, 422, 503] },
  },
  '/v1/tasks/{taskId}/stdin': {
    post: {
      summary: 'Write to a running task’s stdin and/or close it (fenced by `attempt` when given); the audit records size and SHA-256, never the bytes. 409 when the task is not running (or stopping, or finished), for a stale attempt, or when the command has not read earlier input yet',
      tags: ['tasks'],
      params: ['taskId'],
      body: 'StdinWrite',
      ok: [202, 'StdinWritten'],
      errors: [400, 404, 409, 413, 422, 503],
    },
  },
  '/v1/admin/projections': {
    get: { summary: 'Operator (ADMIN_TOKEN): every read model, its position, rows and last rebuild', tags: ['operations'], ok: [200, 'ProjectionList'], errors: [403, 503] },
  },
  '/v1/admin/projections/{name}': {
    get: { summary: 'Operator (ADMIN_TOKEN): one read model', tags: ['operations'], params: ['name'], ok: [200, 'ProjectionStatus'], errors: [403, 404, 503] },
  },
  '/v1/admin/projections/{name}/rebuild': {
    post: {
      summary: 'Operator (ADMIN_TOKEN): rebuild a read model from sequence 1 while serving; 202 once it runs, 409 while another rebuild of it runs, 404 for an unknown name (the message lists the valid ones)',
      tags: ['operations'],
      params: ['name'],
      ok: [202, 'RebuildStarted'],
      errors: [403, 404, 409, 503],
    },
  },
  '/healthz': { get: { summary: 'Liveness', tags: ['operations'], auth: 'none', ok: [200, 'Health'] } },
  '/readyz': { get: { summary: 'Readiness (NATS, Postgres, a live runner); 503 with the failing checks', tags: ['operations'], auth: 'none', ok: [200, 'Readiness'], errors: [503] } },
  '/openapi.json': { get: { summary: 'This document', tags: ['operations'], auth: 'none', ok: [200, null, 'application/json'] } },
  '/': { get: { summary: 'The web console', tags: ['console'], auth: 'none', ok: [200, null, 'text/html'] } },
  '/console/{path}': { get: { summary: 'The web console’s scripts and styles', tags: ['console'], auth: 'none', params: ['path'], ok: [200, null, 'text/plain'], errors: [404] } },
  '/console/dev-token': {
    get: { summary: 'Whether development tokens are on', tags: ['console'], auth: 'none', ok: [200, 'Health'], errors: [403] },
    post: { summary: 'A development token for any user and tenant (refused in production)', tags: ['console'], auth: 'none', body: 'DevTokenRequest', ok: [201, 'DevToken'], errors: [403, 422] },
  },
};

/** Builds the document (the server URL is left to the client: it is wherever this was fetched). */
export function openApiDocument(version = '0.1.0'): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Handplane API',
      version,
      description:
        'Tenant and user come from the verified token only; anything of another tenant, or of a conversation the caller is not a member of, answers 404. Errors are `{error: {code, message}}`. Bodies over 1 MiB answer 413; each user has a request budget per gateway instance (429 with Retry-After).',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256 with JWT_SECRET, or RS256 via JWKS_URL); claims sub, tenant, optional name, exp' },
        sseTicket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'from POST /v1/conversations/{id}/events/ticket; one conversation, one user, 60 s' },
      },
      schemas: {
        ...SCHEMAS,
        TaskList: list('Task'),
        AuditLog: list('AuditEntry'),
        RunList: list('Run'),
        TodoList: list('TodoItem'),
        QueueList: list('QueueEntry'),
        CommandList: list('CommandAttempt'),
        LogIndex: list('LogIndexEntry'),
      },
    },
    paths: Object.fromEntries(Object.entries(PATHS).map(([path, ops]) => [path, Object.fromEntries(Object.entries(ops).map(([m, o]) => [m, operation(o)]))])),
  };
}
