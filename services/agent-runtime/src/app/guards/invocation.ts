import { hasSubstitution, nodeType, wordValue, type ShNode, type Vars } from './shell-ast';

/** Shell code an invocation runs: `bash -c STR`, `eval …`, a heredoc fed to a shell (`text` undefined: built at run time). */
export interface NestedScript {
  readonly via: string;
  readonly text?: string;
}

/** A simple command with its wrappers (`env`, `sudo`, `timeout`, …) peeled off. */
export interface Invocation {
  /** Base name of the command that really runs; undefined when known only at run time. */
  readonly name?: string;
  /** The name is the output of a command substitution (`$(…) args`). */
  readonly computedName: boolean;
  /** Literal values of its arguments (undefined where computed at run time). */
  readonly args: readonly (string | undefined)[];
  readonly wrappers: readonly string[];
  readonly scripts: readonly NestedScript[];
  /** A shell with no script argument: it runs whatever arrives on its standard input. */
  readonly readsStdin: boolean;
}

export const SHELLS: ReadonlySet<string> = new Set(['bash', 'sh', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'posh', 'yash', 'rbash']);

const set = (...xs: string[]) => new Set(xs);
/** Wrappers that run their argument list as a command: options taking a value, then positional words to skip. */
const WRAPPERS: Record<string, { withArg: ReadonlySet<string>; positional: number }> = {
  env: { withArg: set('-u', '--unset', '-C', '--chdir'), positional: 0 },
  command: { withArg: set(), positional: 0 },
  builtin: { withArg: set(), positional: 0 },
  exec: { withArg: set('-a'), positional: 0 },
  sudo: { withArg: set('-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T', '--user', '--group', '--chdir'), positional: 0 },
  doas: { withArg: set('-u', '-C'), positional: 0 },
  nice: { withArg: set('-n', '--adjustment'), positional: 0 },
  ionice: { withArg: set('-c', '-n', '-t', '--class', '--classdata'), positional: 0 },
  chrt: { withArg: set(), positional: 1 },
  taskset: { withArg: set(), positional: 1 },
  timeout: { withArg: set('-s', '--signal', '-k', '--kill-after'), positional: 1 },
  stdbuf: { withArg: set('-i', '-o', '-e'), positional: 0 },
  time: { withArg: set('-f', '-o', '--format', '--output'), positional: 0 },
  xargs: { withArg: set('-a', '-d', '-E', '-I', '-L', '-n', '-P', '-s', '--arg-file', '--delimiter', '--max-args', '--max-procs', '--replace'), positional: 0 },
  flock: { withArg: set('-w', '-E', '--timeout', '--conflict-exit-code'), positional: 1 },
  unbuffer: { withArg: set(), positional: 0 },
  strace: { withArg: set('-o', '-e', '-p', '-s', '-u', '-E'), positional: 0 },
  ltrace: { withArg: set('-o', '-e', '-p', '-s', '-u'), positional: 0 },
  busybox: { withArg: set(), positional: 0 },
};
/** Commands that run a `-c STR` (or `--command STR`) argument as shell code. */
const DASH_C: ReadonlySet<string> = set('su', 'runuser', 'script', 'flock');

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Index of the first word after the options (and `positional` words), or undefined when none is left. */
function skipOptions(lits: readonly (string | undefined)[], i: number, withArg: ReadonlySet<string>, positional: number, assignments = false): number | undefined {
  let j = i;
  for (; j < lits.length; j++) {
    const a = lits[j];
    if (a === undefined) break;
    if (a === '--') {
      j++;
      break;
    }
    if (assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) continue;
    if (!a.startsWith('-') || a === '-') break;
    if (withArg.has(a)) j++;
  }
  j += positional;
  return j < lits.length ? j : undefined;
}

/** The script of `bash [opts] -c STR` (an option cluster holding `c`), `null` without `-c`, `undefined` when computed. */
function shellScript(lits: readonly (string | undefined)[], i: number): { script?: string | null; files: boolean } {
  let dashC = false;
  for (let j = i; j < lits.length; j++) {
    const a = lits[j];
    if (a === undefined) return dashC ? { script: undefined, files: false } : { script: null, files: true };
    if (a === '-o' || a === '-O' || a === '+O' || a === '--rcfile' || a === '--init-file') {
      j++;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(a)) {
      if (a.startsWith('-') && a.includes('c')) dashC = true;
      continue;
    }
    if (a.startsWith('--')) continue;
    return dashC ? { script: a, files: false } : { script: null, files: true };
  }
  return { script: null, files: false };
}

/** Text of a heredoc or here-string fed to a shell's standard input. */
function stdinScripts(redirs: readonly ShNode[], vars: Vars, via: string): NestedScript[] {
  const out: NestedScript[] = [];
  for (const r of redirs) {
    const word = r.Hdoc ?? (r.Op === 63 ? r.Word : null); // 63: `<<<` (here-string)
    if (word) out.push({ via, text: wordValue(word, vars) });
  }
  return out;
}

/**
 * Resolves a simple command: peels wrappers, finds the command that really runs and the shell code
 * it runs (`bash -c`, `eval`, `su -c`, `env -S`, `watch`, heredocs to a shell, `find -exec`).
 */
export function invocation(call: ShNode, redirs: readonly ShNode[], vars: Vars): Invocation | undefined {
  const words = call.Args as ShNode[];
  if (!words.length) return undefined;
  const lits = words.map((w) => wordValue(w, vars));
  const wrappers: string[] = [];
  const scripts: NestedScript[] = [];
  let i = 0;
  for (;;) {
    const raw = lits[i];
    if (raw === undefined) return { computedName: hasSubstitution(words[i]!), args: lits.slice(i + 1), wrappers, scripts, readsStdin: false };
    const name = basename(raw);
    const args = lits.slice(i + 1);
    const done = (readsStdin = false): Invocation => ({ name, computedName: false, args, wrappers, scripts, readsStdin });
    if (SHELLS.has(name)) {
      const s = shellScript(lits, i + 1);
      if (s.script !== null) scripts.push({ via: `${name} -c`, ...(s.script !== undefined ? { text: s.script } : {}) });
      const stdin = s.script === null && !s.files;
      if (stdin) scripts.push(...stdinScripts(redirs, vars, `${name} <<`));
      return done(stdin);
    }
    if (name === 'eval') {
      scripts.push({ via: 'eval', ...(args.every((a) => a !== undefined) ? { text: args.join(' ') } : {}) });
      return done();
    }
    if (name === 'watch') {
      const j = skipOptions(lits, i + 1, set('-n', '--interval', '-d'), 0);
      if (j !== undefined) scripts.push({ via: 'watch', ...(lits.slice(j).every((a) => a !== undefined) ? { text: lits.slice(j).join(' ') } : {}) });
      return done();
    }
    const c = args.findIndex((a) => a === '-c' || a === '--command');
    if (DASH_C.has(name) && c >= 0) {
      scripts.push({ via: `${name} -c`, ...(args[c + 1] !== undefined ? { text: args[c + 1] } : {}) });
      return done();
    }
    const s = name === 'env' ? args.findIndex((a) => a === '-S' || a === '--split-string') : -1;
    if (s >= 0) {
      scripts.push({ via: 'env -S', ...(args[s + 1] !== undefined ? { text: args[s + 1] } : {}) });
      return done();
    }
    if (name === 'find') {
      const e = args.findIndex((a) => a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir');
      if (e < 0) return done();
      wrappers.push(name);
      i = i + 1 + e + 1;
      if (i >= lits.length) return done();
      continue;
    }
    const w = WRAPPERS[name];
    if (!w || (name === 'command' && args.some((a) => a === '-v' || a === '-V'))) return done();
    const next = skipOptions(lits, i + 1, w.withArg, w.positional, name === 'env' || name === 'sudo');
    if (next === undefined) return done();
    wrappers.push(name);
    i = next;
  }
}

/** Literal values assigned by a statement (`X=1`, `export X=1`, `local X=1`) update what later words can resolve. */
export function recordAssignments(cmd: ShNode, vars: Vars): void {
  const t = nodeType(cmd);
  const assigns: ShNode[] = t === 'CallExpr' && !(cmd.Args as ShNode[]).length ? (cmd.Assigns as ShNode[]) : t === 'DeclClause' ? (cmd.Args as ShNode[]) : [];
  for (const a of assigns) {
    const name = a.Name?.Value as string | undefined;
    if (!name) continue;
    const v = a.Value ? wordValue(a.Value, vars) : '';
    if (v === undefined || a.Array || a.Index) vars.delete(name);
    else vars.set(name, v);
  }
}
