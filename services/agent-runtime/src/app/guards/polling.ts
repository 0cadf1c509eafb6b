import { invocation, recordAssignments, type Invocation } from './invocation';
import { nodeType, parseShell, substitutions, wordValue, type ShNode, type Vars } from './shell-ast';

/**
 * G3: does a command only poll? A command polls when every command in it (substitutions, loops,
 * nested `bash -c` included) only waits (`sleep`, `wait`, `watch`, `top`, `tail -f`), probes
 * processes (`ps`, `pgrep`, `pidof`, `jobs`, `kill -0`) or reads state quietly (`echo`, `test`,
 * `grep`, `curl` without a body, …), and at least one of them waits or probes — or it is a
 * `while`/`until` loop that only spins on quiet commands. Anything that does work makes it real.
 */
export interface PollVerdict {
  readonly pollOnly: boolean;
  /** The waiting or probing commands found (for the message). */
  readonly polls: readonly string[];
}

const WAITS: ReadonlySet<string> = new Set(['sleep', 'usleep', 'wait', 'watch', 'top', 'htop', 'atop', 'btop', 'inotifywait']);
const PROBES: ReadonlySet<string> = new Set(['ps', 'pgrep', 'pidof', 'jobs', 'pstree']);
const QUIET: ReadonlySet<string> = new Set([
  ...['echo', 'printf', 'true', 'false', ':', 'test', '[', 'date', 'cd', 'pwd', 'clear', 'break', 'continue', 'exit', 'return', 'read', 'seq', 'expr'],
  ...['grep', 'egrep', 'fgrep', 'rg', 'awk', 'head', 'tail', 'wc', 'sort', 'uniq', 'cut', 'tr', 'sed', 'cat', 'less', 'ls', 'stat', 'du', 'df', 'free', 'uptime', 'file'],
  ...['curl', 'wget', 'nc', 'netstat', 'ss', 'lsof', 'jq'],
]);

interface Acc {
  poll: boolean;
  other: boolean;
  readonly polls: string[];
}

const DATA_FLAGS = /^(-d|--data.*|-F|--form|-T|--upload-file|-X|--request|--post-data|--post-file|--method)$/;
/** Redirect operators that write a file: `>`, `>>`, `<>`, `>|`, `&>`, `&>>`. */
const WRITES: ReadonlySet<number> = new Set([54, 55, 57, 60, 64, 65]);

/** How one resolved command counts: a wait or probe, quiet, or real work. */
function kindOf(inv: Invocation): 'poll' | 'quiet' | 'other' {
  const name = inv.name;
  if (!name) return 'other';
  const flags = inv.args.filter((a): a is string => a !== undefined && a.startsWith('-'));
  if (name === 'kill' || name === 'pkill') return flags.includes('-0') ? 'poll' : 'other';
  if (name === 'tail') return flags.some((f) => /^-[a-zA-Z]*[fF]|^--follow/.test(f)) ? 'poll' : 'quiet';
  if (name === 'read') return flags.some((f) => /^-[a-zA-Z]*t/.test(f)) ? 'poll' : 'quiet';
  if (name === 'sed') return flags.some((f) => /^-[a-zA-Z]*i|^--in-place/.test(f)) ? 'other' : 'quiet';
  if (name === 'curl' || name === 'wget') return flags.some((f) => DATA_FLAGS.test(f.replace(/=.*$/, ''))) || inv.args.includes('-o') ? 'other' : 'quiet';
  if (WAITS.has(name) || PROBES.has(name)) return 'poll';
  return QUIET.has(name) ? 'quiet' : 'other';
}

/** `while read line` (without a timeout): a loop over input lines, not a wait. */
function readsInput(cond: readonly ShNode[], vars: Vars): boolean {
  const last = cond[cond.length - 1]?.Cmd;
  if (!last || nodeType(last) !== 'CallExpr') return false;
  const inv = invocation(last, [], vars);
  return inv?.name === 'read' && kindOf(inv) === 'quiet';
}

class Classifier {
  private readonly functions = new Map<string, ShNode>();
  private readonly calling = new Set<string>();
  private depth = 0;

  constructor(private readonly acc: Acc) {}

  script(src: string): void {
    const parsed = parseShell(src);
    if ('error' in parsed || this.depth > 6) {
      this.acc.other = true; // what cannot be read is not a poll (G2 refuses what cannot be parsed)
      return;
    }
    this.depth++;
    this.stmts(parsed.script.file.Stmts as ShNode[], new Map());
    this.depth--;
  }

  private stmts(list: readonly ShNode[], vars: Vars): void {
    for (const s of list) this.stmt(s, vars);
  }

  private stmt(s: ShNode, vars: Vars): void {
    for (const r of s.Redirs as ShNode[]) {
      const target = wordValue(r.Word, vars);
      if (WRITES.has(r.Op as number) && target !== '/dev/null') this.acc.other = true;
      for (const sub of substitutions(r)) this.stmts(sub, vars);
    }
    if (s.Cmd) this.cmd(s.Cmd, s.Redirs as ShNode[], vars);
  }

  private words(n: ShNode, vars: Vars): void {
    for (const sub of substitutions(n)) this.stmts(sub, vars);
  }

  private cmd(c: ShNode, redirs: ShNode[], vars: Vars): void {
    switch (nodeType(c)) {
      case 'CallExpr':
        this.call(c, redirs, vars);
        return recordAssignments(c, vars);
      case 'BinaryCmd':
        return this.stmts([c.X, c.Y], vars);
      case 'Block':
      case 'Subshell':
        return this.stmts(c.Stmts as ShNode[], vars);
      case 'IfClause':
        for (let x = c; x; x = x.Else) this.stmts([...(x.Cond as ShNode[]), ...(x.Then as ShNode[])], vars);
        return;
      case 'WhileClause':
        return this.loop(c, vars);
      case 'ForClause':
        this.words(c.Loop, vars);
        return this.stmts(c.Do as ShNode[], vars);
      case 'CaseClause':
        this.words(c.Word, vars);
        for (const item of c.Items as ShNode[]) this.stmts(item.Stmts as ShNode[], vars);
        return;
      case 'FuncDecl':
        this.functions.set(String(c.Name.Value), c.Body);
        return;
      case 'TimeClause':
      case 'CoprocClause':
        return c.Stmt ? this.stmt(c.Stmt, vars) : undefined;
      case 'DeclClause':
      case 'ArithmCmd':
      case 'LetClause':
      case 'TestClause':
        this.words(c, vars);
        return recordAssignments(c, vars);
      default:
        this.acc.other = true;
    }
  }

  /** A `while`/`until` loop that does no work is a wait, whatever its body prints (`while read` iterates input instead). */
  private loop(c: ShNode, vars: Vars): void {
    const before = this.acc.other;
    this.acc.other = false;
    this.stmts([...(c.Cond as ShNode[]), ...(c.Do as ShNode[])], vars);
    if (!this.acc.other && !readsInput(c.Cond as ShNode[], vars)) {
      this.acc.poll = true;
      this.acc.polls.push(`${c.Until ? 'until' : 'while'} loop`);
    }
    this.acc.other ||= before;
  }

  private call(c: ShNode, redirs: ShNode[], vars: Vars): void {
    for (const w of [...(c.Args as ShNode[]), ...(c.Assigns as ShNode[])]) this.words(w, vars);
    const inv = invocation(c, redirs, vars);
    if (!inv) return;
    if (inv.scripts.length && !WAITS.has(inv.name ?? '')) {
      for (const s of inv.scripts) (s.text === undefined ? () => (this.acc.other = true) : () => this.script(s.text!))();
      return;
    }
    const body = inv.name ? this.functions.get(inv.name) : undefined;
    if (body && !this.calling.has(inv.name!)) {
      this.calling.add(inv.name!);
      this.stmt(body, vars);
      this.calling.delete(inv.name!);
      return;
    }
    const kind = kindOf(inv);
    if (kind === 'poll') {
      this.acc.poll = true;
      this.acc.polls.push(inv.name === 'kill' || inv.name === 'pkill' ? `${inv.name} -0` : inv.name!);
    } else if (kind === 'other') this.acc.other = true;
  }
}

/** G3: whether `command` only polls (see {@link PollVerdict}). */
export function classifyPolling(command: string): PollVerdict {
  const acc: Acc = { poll: false, other: false, polls: [] };
  new Classifier(acc).script(command);
  return { pollOnly: acc.poll && !acc.other, polls: [...new Set(acc.polls)] };
}
