import { ApiError } from './api';
import { option, parseArgs } from './args';
import { chatCommand } from './commands/chat';
import { auditCommand, stopAllCommand } from './commands/conversation';
import { projectionsCommand } from './commands/projections';
import { runCommand } from './commands/run';
import { runsCommand } from './commands/runs';
import { tasksCommand } from './commands/tasks';
import { tokenCommand } from './commands/token';
import { makeContext, type Context } from './context';
import { processIo, UsageError, type Io } from './io';

export type { Io } from './io';

const USAGE = `usage: handplane [--url URL] [--token TOKEN] [--json] <command> [options]

commands:
  token <user> <tenant> [--name N] [--ttl S]   print a development token (HS256, JWT_SECRET or the dev secret)
  chat [conversation] [--no-wait]              talk to the agent; events stream as they happen
  run [--conversation ID] [--cwd D] [--env K=V]… [--timeout-ms N] -- <command…>
                                               run a command, follow its output, exit with its exit code
  tasks ls [--all] [--status S] [--conversation ID]   the tasks you may see (running ones by default)
  tasks show <taskId>                          one task
  tasks commands <taskId>                      its attempts: runner, exit, result
  tasks logs [-f] <taskId>                     its output (-f: follow until it is done)
  tasks stop [--attempt N] <taskId>            stop a task
  tasks stdin [--close] [-n] <taskId> [data|-] input for a running task (data + newline, - = stdin)
  stop-all <conversation>                      stop every task and the active run of a conversation
  runs <conversation>                          the runs of the agent, oldest first
  audit <conversation> [--tasks]               the conversation's log, in order (--tasks: with each task's own events)
  projections ls                               operator: each read model, its position and rows (HANDPLANE_ADMIN_TOKEN)
  projections rebuild [name…]                  operator: rebuild read models from sequence 1 while serving (all when no name)

options:
  --url URL      the gateway (default: HANDPLANE_URL or http://127.0.0.1:8080)
  --token T      a bearer token (default: HANDPLANE_TOKEN)
  --json         machine-readable output on stdout
`;

const COMMANDS: Record<string, (ctx: Context, argv: string[]) => Promise<number>> = {
  token: tokenCommand,
  chat: chatCommand,
  run: runCommand,
  tasks: tasksCommand,
  'stop-all': stopAllCommand,
  audit: auditCommand,
  runs: runsCommand,
  projections: projectionsCommand,
};

/** Global options come before the command; the command parses the rest. */
function split(argv: string[]): { globals: string[]; command?: string; rest: string[] } {
  const globals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--url' || a === '--token') globals.push(a, argv[++i] ?? '');
    else if (a.startsWith('-')) globals.push(a);
    else return { globals, command: a, rest: argv.slice(i + 1) };
  }
  return { globals, rest: [] };
}

/**
 * The `handplane` CLI: returns the process exit code (for `run`, the command's own), writing to
 * `io` (the process by default). 2 is a usage mistake, 1 any other failure.
 */
export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  try {
    const { globals, command, rest } = split(argv);
    // --json may also follow the command (`handplane tasks ls --json`).
    const jsonAfter = rest.indexOf('--json');
    const dashdash = rest.indexOf('--');
    const json = jsonAfter >= 0 && (dashdash < 0 || jsonAfter < dashdash);
    const args = parseArgs(globals, { flags: ['json', 'help', 'h'], options: ['url', 'token'] });
    if (!command || command === 'help' || args.flags.has('help') || args.flags.has('h')) {
      io.out(USAGE);
      return 0;
    }
    const run = COMMANDS[command];
    if (!run) throw new UsageError(`unknown command ${JSON.stringify(command)}; see handplane --help`);
    const ctx = makeContext(io, { url: option(args, 'url'), token: option(args, 'token'), json: json || args.flags.has('json') });
    return await run(ctx, json ? rest.filter((_, i) => i !== jsonAfter) : rest);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`handplane: ${e.message}\n`);
      return 2;
    }
    if (e instanceof ApiError) {
      io.err(`handplane: ${e.message}${e.code && e.status ? ` (${e.status} ${e.code})` : ''}\n`);
      return 1;
    }
    io.err(`handplane: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  }
}
