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
          wait_for_tasks: {
            type: 'array',
            description:
              'Task ids to wait for (woken when each finishes), or {taskId, until, timeoutMs?} to be woken once when a condition holds while the task keeps running: until is {"outputMatches": "<regex, one line>"}, {"portOpen": <port>}, {"fileExists": "<path in the workspace>"} or "exit". Never poll with sleep/curl/pgrep instead.',
            items: {
              anyOf: [
                { type: 'string' },
                {
                  type: 'object',
                  properties: {
                    taskId: { type: 'string' },
                    until: {
                      anyOf: [
                        { type: 'string', enum: ['exit'] },
                        { type: 'object', properties: { outputMatches: { type: 'string' } }, required: ['outputMatches'] },
                        { type: 'object', properties: { portOpen: { type: 'integer', minimum: 1, maximum: 65535 } }, required: ['portOpen'] },
                        { type: 'object', properties: { fileExists: { type: 'string' } }, required: ['fileExists'] },
                      ],
                    },
                    timeoutMs: { type: 'integer', minimum: 1 },
                  },
                  required: ['taskId', 'until'],
                },
              ],
            },
          },
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
      name: 'write_stdin',
      description:
        "Write to a running task's standard input, e.g. the answer to a prompt like `Continue? [y/N]` (include the newline the command expects). `attempt` must be the task's current attempt. close: true ends the input (the command reads end-of-file).",
      parameters: {
        type: 'object',
        properties: { taskId: { type: 'string' }, attempt: { type: 'integer', minimum: 0 }, data: { type: 'string' }, close: { type: 'boolean' } },
        required: ['taskId', 'attempt'],
        additionalProperties: false,
      },
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
