import { invocation, recordAssignments, type Invocation, type NestedScript } from './invocation';
import { nodeType, parseShell, snippet, walk, wordValue, type Script, type ShNode, type Vars } from './shell-ast';

/** One way a command would escape its task (G2). */
export interface Detachment {
  /** The form found: `&`, `nohup`, `setsid`, `tmux new -d`, …, or `unverifiable`. */
  readonly form: string;
  /** Where: the source of the statement or command. */
  readonly at: string;
  readonly why: string;
}

/** What the G2 analysis found; `error` when the command (or shell code inside it) cannot be parsed. */
export type DetachmentReport = { readonly error: string; readonly at?: string } | { readonly found: readonly Detachment[] };

/** Nested shell code (`bash -c "eval '…'"`) is followed this deep; deeper is refused. */
const MAX_DEPTH = 6;

const ALWAYS: Record<string, string> = {
  nohup: 'nohup keeps the command running after the task ends, detached from it',
  disown: 'disown removes a job from the shell so that nothing waits for it',
  setsid: 'setsid starts the command in a new session, outside the task',
  daemonize: 'daemonize turns the command into a daemon outside the task',
  'start-stop-daemon': 'start-stop-daemon starts a daemon outside the task',
  'systemd-run': 'systemd-run starts the command as a separate unit outside the task',
  at: 'at schedules the command to run later, outside the task',
  batch: 'batch schedules the command to run later, outside the task',
  bg: 'bg continues a job in the background',
  coproc: 'coproc runs a coprocess in the background',
};

const TMUX_NEW: ReadonlySet<string> = new Set(['new', 'new-session', 'neww', 'new-window', 'splitw', 'split-window', 'respawnp', 'respawn-pane', 'respawnw', 'respawn-window']);

const shortFlags = (a: string | undefined) => (a && /^-[A-Za-z]+$/.test(a) ? a.slice(1) : '');

/** `screen -d -m`, `screen -dmS x`: a detached session. */
function screenDetaches(args: readonly (string | undefined)[]): boolean {
  return args.some((a) => shortFlags(a).includes('d'));
}

/** `tmux new -d`, `tmux neww -d`, `tmux run -b` (subcommands may be chained with `;`). */
function tmuxDetaches(args: readonly (string | undefined)[]): boolean {
  let sub: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === ';' || a === '\\;') {
      sub = undefined;
      continue;
    }
    if (sub === undefined) {
      if (a && /^-[LSfc]$/.test(a)) i++; // global options with a value
      else if (a && !a.startsWith('-')) sub = a;
      continue;
    }
    const flags = shortFlags(a);
    if (TMUX_NEW.has(sub) && flags.includes('d')) return true;
    if ((sub === 'run' || sub === 'run-shell') && flags.includes('b')) return true;
  }
  return false;
}

/** `trap '' HUP` ignores hangups for everything started afterwards: nohup by other means. */
function trapIgnoresHangup(args: readonly (string | undefined)[]): boolean {
  return args[0] === '' && args.slice(1).some((a) => a === 'HUP' || a === 'SIGHUP' || a === '1');
}

function detachingCall(inv: Invocation): { form: string; why: string } | undefined {
  if (inv.computedName) return { form: 'computed command name', why: 'the command name is the output of a substitution, so what runs cannot be checked; write the command out' };
  const name = inv.name;
  if (!name) return undefined;
  if (ALWAYS[name]) return { form: name, why: ALWAYS[name]! };
  if (name === 'screen' && screenDetaches(inv.args)) return { form: 'screen -d', why: 'screen -d starts a detached terminal session outside the task' };
  if (name === 'tmux' && tmuxDetaches(inv.args)) return { form: 'tmux new -d', why: 'tmux -d starts a detached terminal session outside the task' };
  if (name === 'trap' && trapIgnoresHangup(inv.args)) return { form: "trap '' HUP", why: 'ignoring SIGHUP makes what follows survive the task, like nohup' };
  return undefined;
}

class Scanner {
  readonly found: Detachment[] = [];
  error?: { error: string; at?: string };

  scan(src: string, depth: number, via?: string): void {
    const parsed = parseShell(src);
    if ('error' in parsed) {
      this.error ??= { error: parsed.error, ...(via ? { at: via } : {}) };
      return;
    }
    const vars: Vars = new Map();
    walk(parsed.script.file, (n) => this.visit(parsed.script, n, vars, depth));
  }

  private add(form: string, at: string, why: string): void {
    this.found.push({ form, at, why });
  }

  private visit(script: Script, n: ShNode, vars: Vars, depth: number): boolean {
    switch (nodeType(n)) {
      case 'Stmt':
        if (n.Background) this.add('&', snippet(script, n), '`&` runs it in the background, where no task tracks its output or exit code');
        if (n.Cmd && nodeType(n.Cmd) === 'CallExpr') this.call(script, n.Cmd, n.Redirs as ShNode[], vars, depth);
        if (n.Cmd) recordAssignments(n.Cmd, vars);
        return true;
      case 'CoprocClause':
        this.add('coproc', snippet(script, n), ALWAYS.coproc!);
        return true;
      case 'BinaryCmd':
        if (n.Op === 12 || n.Op === 13) this.pipedScript(script, n, vars, depth); // `|`, `|&`
        return true;
      default:
        return true;
    }
  }

  private call(script: Script, call: ShNode, redirs: ShNode[], vars: Vars, depth: number): void {
    const inv = invocation(call, redirs, vars);
    if (!inv) return;
    const d = detachingCall(inv);
    if (d) this.add(d.form, snippet(script, call), d.why);
    for (const s of inv.scripts) this.nested(script, call, s, depth);
  }

  private nested(script: Script, at: ShNode, s: NestedScript, depth: number): void {
    if (s.text === undefined) {
      this.add('unverifiable', snippet(script, at), `${s.via} runs shell code built at run time, which cannot be checked; write the command out`);
    } else if (depth >= MAX_DEPTH) {
      this.add('unverifiable', snippet(script, at), `shell code nested more than ${MAX_DEPTH} levels deep cannot be checked`);
    } else {
      this.scan(s.text, depth + 1, `${s.via} in ${snippet(script, at, 60)}`);
    }
  }

  /** `echo 'sleep 9 &' | bash`: literal code piped into a shell is checked like `bash -c`. */
  private pipedScript(script: Script, pipe: ShNode, vars: Vars, depth: number): void {
    const consumer = pipe.Y?.Cmd;
    const producer = pipe.X?.Cmd;
    if (!consumer || !producer || nodeType(consumer) !== 'CallExpr' || nodeType(producer) !== 'CallExpr') return;
    const shell = invocation(consumer, pipe.Y.Redirs as ShNode[], vars);
    if (!shell?.readsStdin) return;
    const words = (producer.Args as ShNode[]).map((w) => wordValue(w, vars));
    const name = words[0];
    if (name !== 'echo' && name !== 'printf') return;
    const rest = words.slice(1).filter((w) => !(name === 'echo' && w !== undefined && /^-[neE]+$/.test(w)));
    const text = rest.every((w) => w !== undefined) ? rest.join(' ') : undefined;
    this.nested(script, pipe, { via: `${name} | ${shell.name}`, ...(text !== undefined ? { text } : {}) }, depth);
  }
}

/**
 * G2: every way `command` would detach work from its task, found with a real shell parser,
 * following `bash -c`/`sh -c`/`eval` strings, heredocs and literal code piped into shells,
 * subshells, command and process substitutions and function bodies.
 */
export function findDetachments(command: string): DetachmentReport {
  const s = new Scanner();
  s.scan(command, 0);
  return s.error ? s.error : { found: s.found };
}
