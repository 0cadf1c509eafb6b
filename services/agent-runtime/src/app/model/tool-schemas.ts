/** The tools as OpenAI function definitions (JSON Schema parameters). */
export const TOOL_DEFINITIONS = [
  {
    type: 'function',
    function: {
      name: 'exec',
      description: 'Run a shell command in the foreground on the sandbox. Returns its exit code and output tail, or {taskId, commandId, status: "running_in_background"} when it outlives the foreground window.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'bash command line; never detach it' },
          cwd: { type: 'string', description: 'directory inside the workspace' },
          env: { type: 'object', additionalProperties: { type: 'string' } },
          timeoutMs: { type: 'integer', minimum: 1 },
        },
        required: ['command'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_todos',
      description: 'Replace the todo list. With wait_for_tasks, declare the background tasks to wait for, then end your turn.',
      parameters: {
        type: 'object',
        properties: {
          todos: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'string' },
                content: { type: 'string' },
                status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] },
                taskIds: { type: 'array', items: { type: 'string' } },
              },
              required: ['id', 'content', 'status'],
            },
          },
          wait_for_tasks: { type: 'array', items: { type: 'string' } },
        },
        required: ['todos'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read_output',
      description: "Read a task's output from a byte offset (at most 64 KiB per call; continue from nextOffset).",
      parameters: { type: 'object', properties: { taskId: { type: 'string' }, offset: { type: 'integer', minimum: 0 } }, required: ['taskId'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'stop_task',
      description: 'Stop a task of this conversation (optionally only its attempt `attempt`).',
      parameters: { type: 'object', properties: { taskId: { type: 'string' }, attempt: { type: 'integer', minimum: 0 } }, required: ['taskId'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'ask_user',
      description: 'Ask the people of the conversation a question, then end your turn; the answer starts your next turn.',
      parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
    },
  },
] as const;
