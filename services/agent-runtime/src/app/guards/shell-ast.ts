import { syntax, type ShNode } from 'mvdan-sh';

export type { ShNode };

/** A parsed script and its source (node offsets are byte offsets into it). */
export interface Script {
  readonly file: ShNode;
  readonly src: Buffer;
}

const parser = syntax.NewParser();

/** Parses bash source; `error` is the parser's message when it cannot. */
export function parseShell(src: string): { script: Script } | { error: string } {
  try {
    return { script: { file: parser.Parse(src, 'command'), src: Buffer.from(src) } };
  } catch (e) {
    const err = e as { Error?: () => string; Text?: string; message?: string };
    const message = typeof err?.Error === 'function' ? err.Error() : (err?.Text ?? err?.message ?? String(e));
    return { error: message.replace(/^command:/, 'at ') };
  }
}

/** The Go type name of a node (`CallExpr`, `Stmt`, …). */
export function nodeType(n: ShNode): string {
  return syntax.NodeType(n);
}

/** Visits `n` and everything under it, depth first in source order; `visit` returns false to skip a subtree. */
export function walk(n: ShNode, visit: (n: ShNode) => boolean): void {
  syntax.Walk(n, (x) => (x ? visit(x) : true));
}

/** The source text of a node, shortened for messages. */
export function snippet(script: Script, n: ShNode, max = 120): string {
  const text = script.src.subarray(n.Pos().Offset(), n.End().Offset()).toString('utf8').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Literal shell variables known at a point of a script (assigned a literal value earlier in it). */
export type Vars = Map<string, string>;

/** `\x` → `x` outside quotes (a backslash-newline disappears). */
function unescapeUnquoted(s: string): string {
  return s.replace(/\\(\n|.)/gs, (_, c: string) => (c === '\n' ? '' : c));
}

/** Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline. */
function unescapeDouble(s: string): string {
  return s.replace(/\\([$`"\\\n])/g, (_, c: string) => (c === '\n' ? '' : c));
}

const ANSI: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/** `$'…'` (ANSI-C quoting): the escapes a command name could hide behind. */
function decodeAnsiC(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs, (m, e: string) => {
    if (/^[xuU]/.test(e)) return String.fromCodePoint(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    if (e[0] === 'c') return String.fromCharCode(e.charCodeAt(1) & 0x1f);
    return ANSI[e] ?? m;
  });
}

/** `$X` or `${X}` with no operator: its literal value when known. */
function paramValue(p: ShNode, vars: Vars): string | undefined {
  if (p.Exp || p.Length || p.Excl || p.Index || p.Slice || p.Repl || p.Names) return undefined;
  return vars.get(String(p.Param?.Value ?? ''));
}

function partValue(part: ShNode, vars: Vars): string | undefined {
  switch (nodeType(part)) {
    case 'Lit':
      return unescapeUnquoted(String(part.Value));
    case 'SglQuoted':
      return part.Dollar ? decodeAnsiC(String(part.Value)) : String(part.Value);
    case 'DblQuoted': {
      let out = '';
      for (const p of part.Parts as ShNode[]) {
        const v = nodeType(p) === 'Lit' ? unescapeDouble(String(p.Value)) : nodeType(p) === 'ParamExp' ? paramValue(p, vars) : undefined;
        if (v === undefined) return undefined;
        out += v;
      }
      return out;
    }
    case 'ParamExp':
      return paramValue(part, vars);
    default:
      return undefined; // command, arithmetic or process substitution, globs, braces: known only at run time
  }
}

/** The value of a word after quote removal, or undefined when it depends on run time. */
export function wordValue(word: ShNode | null, vars: Vars = new Map()): string | undefined {
  if (!word) return undefined;
  let out = '';
  for (const p of word.Parts as ShNode[]) {
    const v = partValue(p, vars);
    if (v === undefined) return undefined;
    out += v;
  }
  return out;
}

/** True when a word contains a command or process substitution (its value is computed by running code). */
export function hasSubstitution(word: ShNode): boolean {
  let found = false;
  walk(word, (n) => {
    const t = nodeType(n);
    if (t === 'CmdSubst' || t === 'ProcSubst') found = true;
    return !found;
  });
  return found;
}

/** The statements of every command and process substitution directly inside `n` (not nested ones). */
export function substitutions(n: ShNode): ShNode[][] {
  const out: ShNode[][] = [];
  walk(n, (x) => {
    const t = nodeType(x);
    if (t !== 'CmdSubst' && t !== 'ProcSubst') return true;
    out.push(x.Stmts as ShNode[]);
    return false;
  });
  return out;
}
