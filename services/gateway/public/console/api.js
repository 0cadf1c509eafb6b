// The public HTTP API (DESIGN.md §7) as the console uses it. Every call carries the bearer token.

/** An error answer: HTTP status plus the API's `{error: {code, message}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  const e = body && body.error;
  return new ApiError(res.status, (e && e.code) || `http_${res.status}`, (e && e.message) || res.statusText || `HTTP ${res.status}`);
}

const enc = encodeURIComponent;

export class Api {
  /** `onUnauthorized` runs on any 401: the token expired or was revoked. */
  constructor(token, onUnauthorized = () => {}) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  /** The bearer header (the SSE reader sends it too). */
  get headers() {
    return { authorization: `Bearer ${this.token}` };
  }

  async fetch(method, path, { body, headers = {}, signal } = {}) {
    const res = await fetch(path, {
      method,
      cache: 'no-store',
      signal,
      headers: { ...this.headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) this.onUnauthorized();
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  async json(method, path, opts) {
    const res = await this.fetch(method, path, opts);
    return res.status === 204 ? null : res.json();
  }

  createConversation(title) {
    return this.json('POST', '/v1/conversations', { body: title ? { title } : {} });
  }
  conversation(id) {
    return this.json('GET', `/v1/conversations/${enc(id)}`);
  }
  addMember(id, userId) {
    return this.json('POST', `/v1/conversations/${enc(id)}/members`, { body: { userId } });
  }
  postMessage(id, text, clientMessageId) {
    return this.json('POST', `/v1/conversations/${enc(id)}/messages`, { body: { text, clientMessageId } });
  }
  /** A command run by a person; the key makes a retried submit answer the same task. */
  runCommand(id, command, idempotencyKey) {
    return this.json('POST', `/v1/conversations/${enc(id)}/commands`, { body: { command }, headers: { 'idempotency-key': idempotencyKey } });
  }
  tasks(id) {
    return this.json('GET', `/v1/conversations/${enc(id)}/tasks`);
  }
  task(taskId) {
    return this.json('GET', `/v1/tasks/${enc(taskId)}`);
  }
  /** Every task the caller may see (the registry), optionally of one conversation. */
  allTasks(conversationId) {
    return this.json('GET', `/v1/tasks${conversationId ? `?conversation=${enc(conversationId)}` : ''}`);
  }
  stopTask(taskId, attempt) {
    return this.json('POST', `/v1/tasks/${enc(taskId)}/stop`, { body: attempt ? { attempt } : {} });
  }
  /** Input for a running task (`attempt` fences it: input for an attempt never reaches its retry). */
  writeStdin(taskId, body) {
    return this.json('POST', `/v1/tasks/${enc(taskId)}/stdin`, { body });
  }
  /** Ends epoch `epoch` (the one this console saw), so a stale click never ends a newer one. */
  stopAll(id, epoch) {
    return this.json('POST', `/v1/conversations/${enc(id)}/stop-all`, { body: epoch === undefined ? {} : { epoch } });
  }
  decideApproval(id, approvalId, decision) {
    return this.json('POST', `/v1/conversations/${enc(id)}/approvals/${enc(approvalId)}`, { body: { decision } });
  }
  answerQuestion(id, questionId, text) {
    return this.json('POST', `/v1/conversations/${enc(id)}/questions/${enc(questionId)}/answer`, { body: { text } });
  }

  /** One slice of a task's output from `offset`: raw bytes and where to go on. */
  async output(taskId, offset) {
    const res = await this.fetch('GET', `/v1/tasks/${enc(taskId)}/output?offset=${offset}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    return {
      from: offset,
      bytes,
      next: Number(res.headers.get('x-next-offset') ?? offset + bytes.length),
      resultState: res.headers.get('x-result-state') ?? '',
      complete: res.headers.get('x-output-complete') === 'true',
    };
  }
}

/** The claims of a JWT, read (not verified: the gateway verifies) to show who is signed in. */
export function claimsOf(token) {
  const part = String(token).split('.')[1];
  if (!part) throw new Error('this is not a JWT');
  const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
  const c = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (ch) => ch.charCodeAt(0))));
  if (typeof c.sub !== 'string' || typeof c.tenant !== 'string') throw new Error('the token has no sub or tenant claim');
  return { userId: c.sub, tenant: c.tenant, name: typeof c.name === 'string' ? c.name : undefined, exp: typeof c.exp === 'number' ? c.exp : undefined };
}
