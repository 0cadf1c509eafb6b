import { SYSTEM_PROMPT } from './system-prompt';
import type { TranscriptEntry } from './transcript';

/** One chat-completions message. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

const json = (v: unknown) => JSON.stringify(v);

/**
 * The transcript as chat-completions messages. Every tool call is answered by a `tool` message
 * with its id; what the runtime adds (task events, answers, approvals, guard notices, the result of
 * an approved command it ran itself) becomes a user message with a `[…]` prefix.
 */
export function toChatMessages(transcript: readonly TranscriptEntry[]): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }];
  const asked = new Set<string>();
  for (const e of transcript) {
    switch (e.kind) {
      case 'user':
        out.push({ role: 'user', content: `[${e.userId}] ${e.text}` });
        break;
      case 'assistant':
        e.toolCalls.forEach((c) => asked.add(c.callId));
        out.push({
          role: 'assistant',
          content: e.text ?? null,
          ...(e.toolCalls.length ? { tool_calls: e.toolCalls.map((c) => ({ id: c.callId, type: 'function' as const, function: { name: c.name, arguments: json(c.args) } })) } : {}),
        });
        break;
      case 'tool_result':
        if (asked.has(e.callId)) out.push({ role: 'tool', tool_call_id: e.callId, content: json({ ok: e.ok, ...(e.ok ? { result: e.result } : (e.result as object)) }) });
        else out.push({ role: 'user', content: `[runtime] the approved command ran: ${json({ ok: e.ok, result: e.result })}` });
        break;
      case 'task_event': {
        const { kind: _k, ...data } = e;
        // The receipt's sentence first: the model is told how the task ended, never a bare status.
        const how = e.receipt ? e.receipt.summary : `${e.status} (no receipt recorded)`;
        out.push({ role: 'user', content: `[task] task ${e.taskId} ${how}: ${json(data)}. Read its output with read_output.` });
        break;
      }
      case 'task_condition':
        out.push({
          role: 'user',
          content:
            e.outcome === 'matched'
              ? `[task] task ${e.taskId} is still running; its output matched ${json(e.until)} at offset ${e.offset}: ${json(e.line)}. Declare another wait, read its output, or stop it.`
              : `[task] task ${e.taskId} is still running; ${e.detail}. Declare another wait, read its output, or stop it.`,
        });
        break;
      case 'guard':
        out.push({ role: 'user', content: `[runtime] ${e.rule}: ${e.detail}` });
        break;
      case 'answer':
        out.push({ role: 'user', content: `[answer] ${e.by} answered question ${e.questionId}: ${e.text}` });
        break;
      case 'approval':
        out.push({ role: 'user', content: `[approval] ${e.by} ${e.decision === 'approve' ? 'approved' : 'rejected'} \`${e.command}\` (${e.approvalId})${e.callId ? '; the runtime runs it now' : ''}.` });
        break;
    }
  }
  return out;
}
