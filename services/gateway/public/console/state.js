// One conversation as the console shows it, built from a snapshot (GET conversation and tasks) and
// then from its SSE events. Task updates only move forward (a replayed or late event never takes a
// finished task back to running), and an event id is applied once.
import { TaskOutput } from './output.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);
const STATUS_RANK = { starting: 0, running: 1, stopping: 2 };
const statusRank = (s) => (TERMINAL.has(s) ? 3 : (STATUS_RANK[s] ?? 0));
const RESULT_RANK = { result_pending: 0, readable: 1, unavailable: 1, delivered: 2 };
const resultRank = (s) => RESULT_RANK[s] ?? 0;

// What a condition wait (issue 10.1) waits for, in words.
const untilText = (u) => {
  if (!u || u === 'exit') return 'it exits';
  if (u.outputMatches !== undefined) return `its output matches /${u.outputMatches}/`;
  if (u.portOpen !== undefined) return `port ${u.portOpen} is open`;
  if (u.fileExists !== undefined) return `${u.fileExists} exists`;
  return 'a condition';
};
const idOf = (d, key) => (d && (d[key] ?? d.id)) || '';
const textOf = (d, ...keys) => {
  for (const k of keys) if (d && typeof d[k] === 'string' && d[k]) return d[k];
  return '';
};

export class ConversationState {
  constructor(id, me) {
    this.id = id;
    this.me = me;
    this.title = '';
    this.members = new Map();
    this.run = { status: 'idle' };
    this.todos = [];
    this.waitForTasks = [];
    this.epoch = 0;
    this.queue = [];
    this.tasks = new Map();
    this.outputs = new Map();
    this.items = [];
    this.byKey = new Map();
    this.lastSeq = 0;
    // What changed since the views last looked: areas, timeline items, task outputs.
    this.dirty = new Set();
    this.changed = new Set();
    this.outputChanged = new Set();
    this.gaps = new Set();
  }

  /** GET /v1/conversations/:id (members are only ever added; run and todos come from events once live). */
  applySnapshot(v, { full }) {
    this.title = v.title || this.title;
    for (const m of v.members || []) this.addMember(m.userId, m.addedAt);
    this.queue = v.queue || [];
    if (full) {
      this.run = v.run || { status: 'idle' };
      this.todos = v.todos || [];
      this.waitForTasks = v.waitForTasks || [];
      this.epoch = v.epoch ?? 0;
    }
    this.touch('header', 'members', 'run', 'todos');
  }

  addMember(userId, addedAt) {
    if (!userId || this.members.has(userId)) return;
    this.members.set(userId, { userId, addedAt });
    this.touch('members');
  }

  touch(...areas) {
    for (const a of areas) this.dirty.add(a);
  }

  output(taskId) {
    let o = this.outputs.get(taskId);
    if (!o) this.outputs.set(taskId, (o = new TaskOutput()));
    return o;
  }

  /** Merges what is known of a task, never moving it backwards within one attempt. */
  mergeTask(p) {
    const cur = this.tasks.get(p.taskId);
    let next;
    if (!cur) next = { status: 'starting', background: false, resultState: 'result_pending', ...p };
    else if (p.attempt !== undefined && cur.attempt !== undefined && p.attempt < cur.attempt) return;
    else if (p.attempt !== undefined && cur.attempt !== undefined && p.attempt > cur.attempt) next = { ...cur, ...p, background: Boolean(p.background) };
    else {
      next = { ...cur };
      for (const [k, v] of Object.entries(p)) if (v !== undefined && !['status', 'background', 'resultState', 'outputBytes'].includes(k)) next[k] = v;
      if (p.status && statusRank(p.status) >= statusRank(cur.status)) next.status = p.status;
      next.background = Boolean(cur.background || p.background);
      if (p.resultState && resultRank(p.resultState) >= resultRank(cur.resultState)) next.resultState = p.resultState;
      next.outputBytes = Math.max(cur.outputBytes || 0, p.outputBytes || 0);
    }
    this.tasks.set(p.taskId, next);
    this.touch('tasks');
    this.changed.add(`task:${p.taskId}`);
  }

  /** Adds a timeline item (or updates the one with the same key). */
  item(key, fields) {
    const cur = this.byKey.get(key);
    if (cur) Object.assign(cur, fields);
    else {
      const it = { key, ...fields };
      this.items.push(it);
      this.byKey.set(key, it);
    }
    this.changed.add(key);
    return this.byKey.get(key);
  }

  system(seq, text, tone = 'info') {
    this.item(`sys:${seq}`, { kind: 'system', seq, text, tone });
  }

  /** A message typed here, shown before the server has it; the event with its clientMessageId replaces it. */
  pendingMessage(clientMessageId, text) {
    this.item(`msg:${clientMessageId}`, { kind: 'message', userId: this.me.userId, text, pending: true });
  }

  failMessage(clientMessageId, error) {
    if (this.byKey.has(`msg:${clientMessageId}`)) this.item(`msg:${clientMessageId}`, { pending: false, error });
  }

  /** Questions and approvals nobody has answered yet. */
  pendingPrompts() {
    return this.items.filter((it) => (it.kind === 'question' && !it.answered) || (it.kind === 'approval' && !it.resolved));
  }

  /** Applies one SSE event; false when it was seen before. */
  apply(ev) {
    if (ev.id <= this.lastSeq) return false;
    this.lastSeq = ev.id;
    const d = ev.data || {};
    const handler = HANDLERS[ev.event];
    if (handler) handler(this, d, ev.id);
    return true;
  }
}

const HANDLERS = {
  'conversation.created'(s, d, seq) {
    s.title = d.title || s.title;
    s.addMember(d.createdBy);
    s.touch('header');
    s.system(seq, `${d.createdBy} created the conversation`);
  },
  'member.added'(s, d, seq) {
    s.addMember(d.userId);
    // The creator joins their own conversation: "created" already said so.
    if (d.userId !== d.addedBy) s.system(seq, `${d.addedBy} added ${d.userId}`);
  },
  'message.user'(s, d, seq) {
    const key = d.clientMessageId && s.byKey.has(`msg:${d.clientMessageId}`) ? `msg:${d.clientMessageId}` : `msg:${d.messageId || seq}`;
    s.item(key, { kind: 'message', seq, userId: d.userId, text: d.text, pending: false, error: undefined });
  },
  'run.started'(s, d, seq) {
    s.run = { status: 'running', runId: d.runId, userId: d.userId, trigger: d.trigger };
    s.touch('run');
    const why = d.trigger === 'task_event' ? 'a task finished' : 'a message';
    s.system(seq, `Agent's turn for ${d.userId} (${why})`, 'run');
  },
  'run.finished'(s, d, seq) {
    s.run = d.outcome === 'waiting' ? { ...s.run, status: 'waiting' } : { status: 'idle' };
    s.touch('run');
    const waitingFor = s.pendingPrompts().length ? 'an answer' : 'background tasks';
    const said = { completed: 'Turn completed', waiting: `Turn ended: waiting for ${waitingFor}`, stopped: 'Turn stopped', failed: 'Turn failed' }[d.outcome] || `Turn ended (${d.outcome})`;
    s.system(seq, d.detail ? `${said}: ${d.detail}` : said, d.outcome === 'failed' ? 'warn' : 'run');
  },
  'assistant.message'(s, d, seq) {
    s.item(`asst:${seq}`, { kind: 'assistant', seq, text: d.text });
  },
  'tool.called'(s, d, seq) {
    s.item(`tool:${d.callId || seq}`, { kind: 'tool', seq, name: d.name, args: d.args, done: false });
  },
  'tool.result'(s, d, seq) {
    s.item(`tool:${d.callId || seq}`, { kind: 'tool', name: d.name, ok: d.ok, result: d.result, done: true });
  },
  'todos.updated'(s, d) {
    s.todos = d.todos || [];
    s.waitForTasks = d.waitForTasks || [];
    s.touch('todos');
  },
  'wait.declared'(s, d, seq) {
    s.waitForTasks = d.taskIds || [];
    s.touch('todos', 'run');
    s.system(seq, `Waiting for ${s.waitForTasks.length} background task(s)`, 'run');
  },
  'wait.invalidated'(s, d, seq) {
    s.waitForTasks = [];
    s.touch('todos', 'run');
    s.system(seq, `Wait ended: ${d.reason}`, 'run');
  },
  'guard.rejected'(s, d, seq) {
    s.system(seq, `Guard ${d.rule} refused: ${d.detail}`, 'warn');
  },
  'command.output'(s, d) {
    const o = s.output(d.taskId);
    const r = o.live(d.offset, d.bytes ?? new TextEncoder().encode(d.text).length, d.text);
    if (r === 'ok') s.outputChanged.add(d.taskId);
    if (r === 'gap') s.gaps.add(d.taskId);
  },
  'task.started'(s, d, seq) {
    s.mergeTask({ taskId: d.taskId, commandId: d.commandId, attempt: d.attempt, userId: d.userId, command: d.command, status: 'running' });
    // A command run from this page already has its item: it gets the event's place in the log.
    s.item(`task:${d.taskId}`, { kind: 'task', seq, taskId: d.taskId });
  },
  'task.backgrounded'(s, d) {
    s.mergeTask({ taskId: d.taskId, background: true });
  },
  'task.stopping'(s, d) {
    s.mergeTask({ taskId: d.taskId, status: 'stopping' });
  },
  'task.finished'(s, d) {
    s.mergeTask({ taskId: d.taskId, status: d.status, exitCode: d.exitCode, signal: d.signal, ...(d.receipt ? { receipt: d.receipt } : {}) });
  },
  'task.result'(s, d) {
    s.mergeTask({ taskId: d.taskId, resultState: d.resultState, outputBytes: d.outputBytes });
    // The bytes after the foreground window never came live: fetch them.
    if ((d.outputBytes || 0) > s.output(d.taskId).end) s.gaps.add(d.taskId);
  },
  'task.awaiting_input'(s, d) {
    s.mergeTask({ taskId: d.taskId, awaiting: { prompt: d.prompt, offset: d.offset, attempt: d.attempt } });
  },
  'task.stdin'(s, d, seq) {
    s.mergeTask({ taskId: d.taskId, awaiting: null });
    const t = s.tasks.get(d.taskId);
    const what = d.bytes ? `${d.bytes} byte(s) of input` : 'no input';
    s.system(seq, `${d.by}${d.via === 'agent' ? ' (agent)' : ''} sent ${what} to ${t ? `“${t.command}”` : d.taskId}${d.closed ? ' and closed its input' : ''}`, 'run');
  },
  'task.condition_met'(s, d, seq) {
    const t = s.tasks.get(d.taskId);
    const name = t ? `“${t.command}”` : d.taskId;
    s.mergeTask({ taskId: d.taskId, condition: { outcome: d.outcome, until: d.until, line: d.line ?? null } });
    if (d.outcome === 'matched') s.system(seq, `Condition met for ${name}: ${untilText(d.until)}${d.line ? ` (“${d.line}”)` : ''}. It keeps running; the agent is told, as ${d.userId}`, 'run');
    else s.system(seq, `Condition not met in time for ${name}: ${untilText(d.until)} (${d.detail}). The agent is told, as ${d.userId}`, 'warn');
  },
  'task.internal_event'(s, d, seq) {
    const t = s.tasks.get(d.taskId);
    s.system(seq, `Task ${t ? `“${t.command}”` : d.taskId} ${d.status}: the agent is told, as ${d.userId}`, 'run');
  },
  'epoch.ended'(s, d, seq) {
    s.epoch = d.nextEpoch ?? s.epoch;
    s.touch('header');
    s.system(seq, `${d.by} stopped everything: ${(d.stoppedTaskIds || []).length} task(s) stopping`, 'warn');
  },
  'approval.requested'(s, d, seq) {
    const id = idOf(d, 'approvalId');
    s.item(`approval:${id}`, { kind: 'approval', seq, id, command: textOf(d, 'command', 'tool'), reason: textOf(d, 'reason', 'summary', 'text'), resolved: false });
    s.touch('cards', 'run');
  },
  'approval.resolved'(s, d) {
    const id = idOf(d, 'approvalId');
    s.item(`approval:${id}`, { kind: 'approval', id, resolved: true, decision: textOf(d, 'decision', 'outcome'), by: textOf(d, 'by', 'userId'), automated: Boolean(d.automated) });
    s.touch('cards', 'run');
  },
  'question.asked'(s, d, seq) {
    const id = idOf(d, 'questionId');
    s.item(`question:${id}`, { kind: 'question', seq, id, text: textOf(d, 'text', 'question'), answered: false });
    s.touch('cards', 'run');
  },
  'question.answered'(s, d) {
    const id = idOf(d, 'questionId');
    s.item(`question:${id}`, { kind: 'question', id, answered: true, answer: textOf(d, 'text', 'answer'), by: textOf(d, 'by', 'userId') });
    s.touch('cards', 'run');
  },
};
