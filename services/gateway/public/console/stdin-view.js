// A running task that waits for input (`task.awaiting_input`): its prompt and a box that writes to its
// stdin (POST /v1/tasks/:id/stdin). Shown on the task's card until someone writes, or the task ends.
import { h, isTerminal } from './dom.js';

/** The prompt box of task `t`, or null when it is not waiting for input. */
export function stdinBox(t, actions) {
  if (!t.awaiting || isTerminal(t.status) || t.status === 'stopping') return null;
  const input = h('input', { class: 'stdin-input', placeholder: 'Input (Enter sends it with a newline)', testid: 'stdin-input', 'aria-label': `Input for ${t.command || t.taskId}`, autocomplete: 'off' });
  const send = (close) => {
    void actions.writeStdin(t, input.value.length || !close ? `${input.value}\n` : '', close);
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
