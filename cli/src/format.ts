import type { CommandView, RunView } from '@handplane/contracts';
import type { Task } from './api';

/** A compact age: 5s, 3m, 2h, 4d. */
export function age(iso: string | null, now = Date.now()): string {
  if (!iso) return '-';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Left-aligned columns, the last one unpadded. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

const oneLine = (s: string, max = 60) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export function taskTable(tasks: Task[]): string {
  if (tasks.length === 0) return 'no tasks\n';
  return table(
    ['TASK', 'STATUS', 'EXIT', 'AGE', 'CONVERSATION', 'COMMAND'],
    tasks.map((t) => [t.taskId, t.status + (t.background && !['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].includes(t.status) ? ' (bg)' : '') + (t.awaitingInput ? ' (awaiting input)' : ''), t.exitCode === null ? (t.signal ?? '-') : String(t.exitCode), age(t.createdAt), t.conversationId, oneLine(t.command)]),
  );
}

export function runTable(runs: RunView[]): string {
  if (runs.length === 0) return 'no runs\n';
  return table(
    ['RUN', 'STATUS', 'TRIGGER', 'USER', 'STARTED', 'FINISHED', 'DETAIL'],
    runs.map((r) => [r.runId, r.status, r.triggerRef ? `${r.trigger} ${r.triggerRef}` : r.trigger, r.userId, r.startedAt, r.finishedAt ?? '-', r.detail ? oneLine(r.detail) : '']),
  );
}

export function commandTable(attempts: CommandView[]): string {
  if (attempts.length === 0) return 'no attempts yet\n';
  return table(
    ['ATTEMPT', 'COMMAND', 'RUNNER', 'EXIT', 'REASON', 'RESULT', 'BYTES', 'FINISHED'],
    attempts.map((c) => [
      String(c.attempt),
      c.commandId,
      c.runnerId ?? '-',
      c.exitCode === null ? (c.signal ?? '-') : String(c.exitCode),
      c.reason ?? '-',
      c.resultState + (c.deliveredTo ? ` (to ${c.deliveredTo})` : ''),
      String(c.outputBytes) + (c.truncation ? ` (${c.truncation.droppedBytes} dropped)` : ''),
      c.finishedAt ?? '-',
    ]),
  );
}

/** `tasks show`: one field a line; the receipt (issue 10.4) as its sentence and its evidence. */
export function taskDetails(t: Task): string {
  const { receipt, ...fields } = t;
  const lines = Object.entries(fields).map(([k, v]) => `${k.padEnd(15)} ${v === null ? '-' : String(v)}`);
  if (receipt) {
    lines.push(`${'receipt'.padEnd(15)} ${receipt.summary}`);
    for (const [k, v] of Object.entries(receipt.evidence)) lines.push(`  ${k.padEnd(13)} ${v === null ? '-' : String(v)}`);
  } else lines.push(`${'receipt'.padEnd(15)} -`);
  return `${lines.join('\n')}\n`;
}

/** One line that says what an event is about (audit and chat). */
export function summarize(type: string, d: Record<string, unknown>): string {
  const s = (k: string) => (d[k] === undefined || d[k] === null ? '' : String(d[k]));
  switch (type) {
    case 'conversation.created':
      return `"${s('title')}" created by ${s('createdBy')}`;
    case 'member.added':
      return `${s('userId')} added by ${s('addedBy')}`;
    case 'message.user':
      return `${s('userId')}: ${oneLine(s('text'))}`;
    case 'assistant.message':
      return oneLine(s('text'));
    case 'run.started':
      return `run ${s('runId')} as ${s('userId')} (${s('trigger')})`;
    case 'run.finished':
      return `run ${s('runId')} ${s('outcome')}${d.detail ? `: ${s('detail')}` : ''}`;
    case 'tool.called':
      return `${s('name')} ${oneLine(JSON.stringify(d.args ?? {}), 50)}`;
    case 'tool.result':
      return `${s('name')} ${d.ok ? 'ok' : 'failed'}`;
    case 'command.output':
      return `${s('taskId')} +${s('bytes')} bytes at ${s('offset')}`;
    case 'task.started':
      return `${s('taskId')} started by ${s('userId')}: ${oneLine(s('command'))}`;
    case 'task.finished':
      if (d.receipt && typeof (d.receipt as { summary?: unknown }).summary === 'string') return `${s('taskId')} ${s('status')}: ${(d.receipt as { summary: string }).summary}`;
      return `${s('taskId')} ${s('status')}${d.exitCode !== null && d.exitCode !== undefined ? ` (exit ${s('exitCode')})` : ''}${d.signal ? ` (${s('signal')})` : ''}`;
    case 'task.result':
      return `${s('taskId')} ${s('resultState')}, ${s('outputBytes')} bytes`;
    case 'task.stopping':
      return `${s('taskId')} stopping (${s('reason')}) at the request of ${s('requestedBy') || 'unknown'}`;
    case 'TaskRegistered':
      return `${s('taskId')} registered by ${s('userId')} (${s('origin')}): ${oneLine(s('command'))}`;
    case 'TaskStarted':
      return `${s('taskId')} attempt ${s('attempt')} started on ${s('runnerId')}`;
    case 'TaskStopRequested':
      return `${s('taskId')} stop requested by ${s('requestedBy')} (${s('reason')})`;
    case 'TaskStopSignalled':
      return `${s('taskId')} signalled on ${s('runnerId')}: ${s('outcome')}`;
    case 'TaskFinished':
      return `${s('taskId')} finished ${s('status')}${d.exitCode !== null && d.exitCode !== undefined ? ` (exit ${s('exitCode')})` : ''}${d.signal ? ` (${s('signal')})` : ''}`;
    case 'CommandExited':
      return `${s('commandId')} exited${d.exitCode !== null && d.exitCode !== undefined ? ` ${s('exitCode')}` : ''}${d.signal ? ` by ${s('signal')}` : ''} (${s('reason')}), ${s('endOffset')} bytes`;
    case 'todos.updated':
      return `${(d.todos as unknown[] | undefined)?.length ?? 0} todos, waiting for [${((d.waitForTasks as string[] | undefined) ?? []).join(', ')}]`;
    case 'guard.rejected':
      return `${s('rule')}: ${oneLine(s('detail'))}`;
    case 'approval.requested':
      return `${s('approvalId')}: ${oneLine(s('command'))} (${oneLine(s('reason'), 40)})`;
    case 'approval.resolved':
      return `${s('approvalId')} ${s('decision')} by ${s('by')}${d.automated ? ' (automated)' : ''}`;
    case 'question.asked':
      return `${s('questionId')}: ${oneLine(s('text'))}`;
    case 'question.answered':
      return `${s('questionId')} by ${s('by')}: ${oneLine(s('text'))}`;
    case 'epoch.ended':
      return `epoch ${s('epoch')} ended by ${s('by')}; stopping ${((d.stoppedTaskIds as string[] | undefined) ?? []).length} task(s)`;
    default:
      return oneLine(JSON.stringify(d), 80);
  }
}
