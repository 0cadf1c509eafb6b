import type { Todo } from '@handplane/domain';
import type { ModelProvider, ModelResponse, ToolCall, TranscriptEntry } from '../../src/app/model/transcript';

/** The failure modes the adversary tries (one per attempt, in seeded random order). */
export const MODES = [
  'complete-bound',
  'complete-explicit',
  'wait-foreign',
  'wait-finished',
  'wait-unknown',
  'wait-mixed',
  'idle',
  'detach',
  'poll-command',
  'poll-read',
  'race-exec-complete',
  'race-complete-exec',
  'race-wait-complete',
  'race-double-complete',
  'race-read-complete',
] as const;
export type Mode = (typeof MODES)[number];

/** Ten-plus ways to detach, several nested where only a real parser sees them. */
export const DETACH_VARIANTS = [
  'npm run build &',
  'nohup npm run build',
  'npm run build & disown',
  'setsid npm run build',
  'coproc npm run build',
  'daemonize /usr/bin/build',
  'start-stop-daemon --start --background --exec /usr/bin/build',
  'screen -dmS b npm run build',
  'tmux new -d -s b npm run build',
  'echo "npm run build" | at now',
  'batch <<< "npm run build"',
  'systemd-run --user npm run build',
  "bash -c 'npm run build &'",
  'sh -c "nohup npm run build"',
  'x=$(npm run build &)',
  '(npm run build &)',
  "eval 'setsid npm run build'",
  'sudo -u ci nohup npm run build',
  'env A=1 timeout 600 setsid npm run build',
  'f() { npm run build & }; f',
  "echo 'npm run build &' | bash",
  'bash <<EOF\nnpm run build &\nEOF',
  '$(echo nohup) npm run build',
  "X=setsid; $X npm run build",
];

export const POLL_VARIANTS = [
  'sleep 30',
  'sleep 5 && ps aux',
  'ps aux | grep build',
  'pgrep -f build',
  'pidof node',
  'jobs',
  'wait',
  'top -b -n 1',
  'watch -n 5 ls',
  'while pgrep -f build >/dev/null; do sleep 5; done',
  'until curl -sf localhost:3000; do sleep 1; done',
  'while ! curl -s localhost:8080; do sleep 1; done',
  'for i in $(seq 1 60); do pgrep build || break; sleep 1; done',
  'kill -0 1234 && echo alive',
  "timeout 600 bash -c 'until [ -f /tmp/done ]; do sleep 2; done'",
  'tail -f build.log',
];

export const MAIN_COMMAND = 'npm run build';
export const QUICK_COMMAND = 'echo quick';

/** The seeded pseudo-random generator of @handplane/testing (mulberry32). */
export { seededRandom as rng } from '@handplane/testing';

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** What the adversary reads back from the transcript. */
interface Seen {
  main?: string;
  quick?: string;
  mainFinished: boolean;
  mainRead: boolean;
  allCompleted: boolean;
  waitAccepted: boolean;
  saidDone: boolean;
  woken: boolean;
}

function seen(t: readonly TranscriptEntry[]): Seen {
  const calls = new Map<string, ToolCall>();
  const s: Seen = { mainFinished: false, mainRead: false, allCompleted: false, waitAccepted: false, saidDone: false, woken: false };
  for (const e of t) {
    if (e.kind === 'assistant') {
      e.toolCalls.forEach((c) => calls.set(c.callId, c));
      if (e.text === 'done' && !e.toolCalls.length) s.saidDone = true;
    } else if (e.kind === 'user' || e.kind === 'answer' || e.kind === 'approval') {
      s.waitAccepted = false; // human input ends the wait (G7): declare it again
    } else if (e.kind === 'task_event') {
      if (e.taskId === s.main) s.mainFinished = s.woken = true;
    } else if (e.kind === 'tool_result') {
      const c = calls.get(e.callId);
      const r = e.result as { taskId?: string; status?: string; error?: { message?: string } };
      if (!c) continue;
      if (c.name === 'exec' && r.taskId && c.args.command === MAIN_COMMAND && !s.main) s.main = r.taskId;
      if (c.name === 'exec' && r.taskId && c.args.command === QUICK_COMMAND) s.quick = r.taskId;
      if (c.name === 'read_output' && e.ok && r.taskId === s.main && r.status && r.status !== 'running') s.mainFinished = s.mainRead = true;
      if (c.name === 'write_todos') {
        const wait = (c.args.wait_for_tasks as string[] | undefined) ?? [];
        if (e.ok && s.main && wait.includes(s.main)) s.waitAccepted = true;
        if (!e.ok && s.main && wait.includes(s.main) && /already finished/.test(r.error?.message ?? '')) s.mainFinished = true;
        if (e.ok && (c.args.todos as Todo[]).every((x) => x.status === 'completed')) s.allCompleted = true;
      }
    }
  }
  return s;
}

type Intent = (s: Seen, id: () => string) => ModelResponse | undefined;
const call = (callId: string, name: string, args: Record<string, unknown>): ToolCall => ({ callId, name, args });
const todos = (a: Todo['status'], b: Todo['status'], extra: Todo[] = []): Todo[] => [
  { id: 'a', content: 'build', status: a, taskIds: [] },
  { id: 'b', content: 'verify', status: b, taskIds: [] },
  ...extra,
];
const one = (c: ToolCall): ModelResponse => ({ toolCalls: [c] });
const launch: Intent = (s, id) => (s.main ? undefined : one(call(id(), 'exec', { command: MAIN_COMMAND })));

/** The misbehaviour of one attempt, as intents evaluated against what the transcript shows. */
function misbehaviour(mode: Mode, r: () => number, labels: Map<string, 'detach' | 'poll'>): Intent[] {
  const times = 1 + Math.floor(r() * 3);
  const repeat = (f: Intent) => Array.from({ length: times }, () => f);
  switch (mode) {
    case 'complete-bound':
      return [launch, (_s, id) => one(call(id(), 'write_todos', { todos: todos('completed', 'pending') }))];
    case 'complete-explicit':
      return [launch, (s, id) => one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending', [{ id: 'c', content: 'deploy', status: 'completed', taskIds: s.main ? [s.main] : [] }]) }))];
    case 'wait-foreign':
      return [launch, (_s, id) => one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: ['t-foreign'] }))];
    case 'wait-finished':
      return [(_s, id) => one(call(id(), 'exec', { command: QUICK_COMMAND })), (s, id) => (s.quick ? one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: [s.quick] })) : undefined)];
    case 'wait-unknown':
      return [launch, (_s, id) => one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: ['t-nope'] }))];
    case 'wait-mixed':
      return [launch, (s, id) => one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: [s.main ?? 't-x', 'no such task'] }))];
    case 'idle':
      return [launch, ...repeat(() => ({ toolCalls: [], text: 'all good, it runs' }))];
    case 'detach':
      return repeat((_s, id) => {
        const command = pick(r, DETACH_VARIANTS);
        labels.set(command, 'detach');
        return one(call(id(), 'exec', { command }));
      });
    case 'poll-command':
      return [
        launch,
        ...repeat((_s, id) => {
          const command = pick(r, POLL_VARIANTS);
          labels.set(command, 'poll');
          return one(call(id(), 'exec', { command }));
        }),
      ];
    case 'poll-read':
      return [launch, ...Array.from({ length: times + 1 }, (): Intent => (s, id) => (s.main ? one(call(id(), 'read_output', { taskId: s.main })) : undefined))];
    case 'race-exec-complete':
      return [(_s, id) => ({ toolCalls: [call(id(), 'exec', { command: MAIN_COMMAND }), call(id(), 'write_todos', { todos: todos('completed', 'pending') })] })];
    case 'race-complete-exec':
      return [(_s, id) => ({ toolCalls: [call(id(), 'write_todos', { todos: todos('completed', 'in_progress') }), call(id(), 'exec', { command: MAIN_COMMAND })] })];
    case 'race-wait-complete':
      return [launch, (s, id) => ({ toolCalls: [call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: s.main ? [s.main] : [] }), call(id(), 'write_todos', { todos: todos('completed', 'completed') })] })];
    case 'race-double-complete':
      return [launch, (_s, id) => ({ toolCalls: [call(id(), 'write_todos', { todos: todos('completed', 'pending') }), call(id(), 'write_todos', { todos: todos('completed', 'completed') })] })];
    case 'race-read-complete':
      return [launch, (s, id) => ({ toolCalls: [call(id(), 'read_output', { taskId: s.main ?? 't-x' }), call(id(), 'write_todos', { todos: todos('completed', 'pending') })] })];
  }
}

/** After misbehaving: do the job properly (launch, wait, read when woken, complete, reply). */
function behave(s: Seen, id: () => string): ModelResponse {
  if (!s.main) return one(call(id(), 'exec', { command: MAIN_COMMAND }));
  if (s.mainFinished) {
    if (!s.mainRead) return one(call(id(), 'read_output', { taskId: s.main }));
    if (!s.allCompleted) return one(call(id(), 'write_todos', { todos: todos('completed', 'completed') }));
    return s.saidDone ? { toolCalls: [] } : { toolCalls: [], text: 'done' };
  }
  if (!s.waitAccepted) return one(call(id(), 'write_todos', { todos: todos('in_progress', 'pending'), wait_for_tasks: [s.main] }));
  return { toolCalls: [] };
}

/**
 * A model that tries one failure mode per conversation, in seeded random order, then behaves.
 * `labels` records the commands it meant as detaching or polling, for the referee.
 */
export class Adversary implements ModelProvider {
  readonly labels = new Map<string, 'detach' | 'poll'>();
  private readonly plans = new Map<string, { intents: Intent[]; used: number }>();
  private calls = 0;

  constructor(private readonly modeOf: (conversationKey: string) => { mode: Mode; r: () => number }) {}

  async next(transcript: readonly TranscriptEntry[]): Promise<ModelResponse> {
    const first = transcript.find((e) => e.kind === 'user');
    const key = first?.kind === 'user' ? first.messageId : 'none';
    let plan = this.plans.get(key);
    if (!plan) {
      const { mode, r } = this.modeOf(key);
      plan = { intents: [() => one(call(this.id(), 'write_todos', { todos: todos('in_progress', 'pending') })), ...misbehaviour(mode, r, this.labels)], used: 0 };
      this.plans.set(key, plan);
    }
    const s = seen(transcript);
    while (plan.used < plan.intents.length) {
      const response = plan.intents[plan.used++]!(s, () => this.id());
      if (response) return response;
    }
    return behave(s, () => this.id());
  }

  private id(): string {
    return `adv-${++this.calls}`;
  }
}
