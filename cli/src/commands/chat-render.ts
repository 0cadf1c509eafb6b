import type { StreamEvent } from '../api';

/** Human lines for the events a person follows in a chat; undefined = the generic one-line summary. */
export function renderEvent(e: StreamEvent): string | undefined {
  const d = e.data;
  const s = (k: string) => (d[k] === undefined || d[k] === null ? '' : String(d[k]));
  switch (e.event) {
    case 'message.user':
      return `${s('userId')}> ${s('text')}\n`;
    case 'assistant.message':
      return `agent> ${s('text')}\n`;
    case 'command.output':
      // Live output as it comes (during the foreground window): the text view of the bytes.
      return s('text');
    case 'task.started':
      return `  ▶ task ${s('taskId')}: ${s('command')}\n`;
    case 'task.backgrounded':
      return `  … task ${s('taskId')} continues in the background\n`;
    case 'task.stopping':
      return `  ■ task ${s('taskId')} stopping (${s('reason')})\n`;
    case 'task.finished':
      return `  ■ task ${s('taskId')} ${s('status')}${d.exitCode !== null && d.exitCode !== undefined ? ` (exit ${s('exitCode')})` : ''}${d.signal ? ` (${s('signal')})` : ''}\n`;
    case 'todos.updated': {
      const todos = (d.todos as { content: string; status: string }[] | undefined) ?? [];
      const mark: Record<string, string> = { completed: 'x', in_progress: '~', pending: ' ' };
      return todos.map((t) => `  [${mark[t.status] ?? '?'}] ${t.content}\n`).join('');
    }
    case 'guard.rejected':
      return `  ⚠ ${s('rule')}: ${s('detail')}\n`;
    case 'approval.requested':
      return `? approval ${s('approvalId')}: ${s('command')} — ${s('reason')}  (/approve ${s('approvalId')} or /reject ${s('approvalId')})\n`;
    case 'question.asked':
      return `? ${s('text')}  (type your answer)\n`;
    case 'task.awaiting_input':
      return `  ? task ${s('taskId')} waits for input: ${s('prompt')}  (handplane tasks stdin ${s('taskId')} <answer>)\n`;
    case 'task.stdin':
      return `  ✎ ${s('by')} sent ${s('bytes')} byte(s) to task ${s('taskId')}${d.closed ? ' and closed its input' : ''}\n`;
    case 'run.started':
    case 'run.finished':
    case 'tool.called':
    case 'tool.result':
    case 'task.result':
    case 'task.internal_event':
    case 'wait.declared':
      return ''; // bookkeeping: --json shows it
    default:
      return undefined;
  }
}
