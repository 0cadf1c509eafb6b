// A running task that waits for input (`task.awaiting_input`): its prompt and a box that writes to its
// stdin (POST /v1/tasks/:id/stdin). Shown on the task's card until someone writes, or the task ends.
import { h, isTerminal } from './dom.js';

// What was typed into each task's box: the card is redrawn on every event of its task, and a
// redraw must not drop (or send without) what the person typed.
const drafts = new Map();

/** The prompt box of task `t`, or null when it is not waiting for input. */
export function stdinBox(t, actions) {
  if (!t.awaiting || isTerminal(t.status) || t.status === 'stopping') return null;
  const input = h('input', { class: 'stdin-input', placeholder: 'Input (Enter sends it with a newline)', testid: 'stdin-input', 'aria-label': `Input for ${t.command || t.taskId}`, autocomplete: 'off' });
  input.value = drafts.get(t.taskId) ?? '';
  input.addEventListener('input', () => drafts.set(t.taskId, input.value));
  const send = (close) => {
    const value = input.value;
    drafts.delete(t.taskId);
    void actions.writeStdin(t, value.length || !close ? `${value}\n` : '', close);
  };
  return h(
    'form',
    {
      class: 'stdin-form',
      testid: 'stdin-form',
      onsubmit: (e) => {
        e.preventDefault();
        send(false);
      },
    },
    h('p', { class: 'small' }, 'Waiting for input: ', h('code', { testid: 'task-prompt' }, t.awaiting.prompt)),
    input,
    h('button', { class: 'btn btn-small', type: 'submit', testid: 'stdin-send' }, 'Send'),
    h('button', { class: 'btn btn-small', type: 'button', testid: 'stdin-close', title: 'Send (if anything is typed) and close the input: the command reads end-of-file', onclick: () => send(true) }, 'Send + close'),
  );
}
