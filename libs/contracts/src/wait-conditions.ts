import { z } from 'zod';

/** Limits of condition waits (issue 10.1). */
export const CONDITION_LIMITS = {
  /** Longest `outputMatches` pattern. */
  patternChars: 256,
  /** Output is matched line by line; a longer line is matched on its first this many characters. */
  lineChars: 4096,
  /** Longest wait on a condition, and the default. */
  maxTimeoutMs: 24 * 3_600_000,
  defaultTimeoutMs: 3_600_000,
} as const;

/**
 * What a wait on a task waits for: its exit (the default), a line of its output matching a pattern,
 * a TCP port opening in its sandbox, or a file appearing in its workspace.
 */
export const waitUntilSchema = z.union([
  z.literal('exit'),
  z.object({ outputMatches: z.string().min(1).max(CONDITION_LIMITS.patternChars) }).strict(),
  z.object({ portOpen: z.number().int().min(1).max(65535) }).strict(),
  z.object({ fileExists: z.string().min(1).max(4096) }).strict(),
]);
export type WaitUntil = z.infer<typeof waitUntilSchema>;

/** One entry of `wait_for_tasks` with a condition. */
export const waitConditionSchema = z
  .object({
    taskId: z.string().min(1).max(200),
    until: waitUntilSchema,
    timeoutMs: z.number().int().positive().max(CONDITION_LIMITS.maxTimeoutMs).optional(),
  })
  .strict();
export type WaitCondition = z.infer<typeof waitConditionSchema>;

// A quantified group that itself contains a quantifier or an alternation ((a+)+, (a|aa)*, (.*)*):
// the shapes that backtrack exponentially. Refused rather than run.
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\}|\|)(?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d+,?\d*\})/;
const BACKREFERENCE = /\\[1-9]|\\k</;

/** A compiled `outputMatches` pattern, or why it is refused (pure). */
export function compileOutputPattern(pattern: string): { ok: true; regex: RegExp } | { ok: false; reason: string } {
  if (pattern.length > CONDITION_LIMITS.patternChars) return { ok: false, reason: `outputMatches must be at most ${CONDITION_LIMITS.patternChars} characters` };
  if (BACKREFERENCE.test(pattern)) return { ok: false, reason: 'outputMatches may not use backreferences' };
  if (NESTED_QUANTIFIER.test(pattern)) return { ok: false, reason: 'outputMatches may not repeat a group that itself repeats or alternates (catastrophic backtracking)' };
  try {
    return { ok: true, regex: new RegExp(pattern, 'u') };
  } catch (e) {
    return { ok: false, reason: `outputMatches is not a valid regular expression: ${(e as Error).message}` };
  }
}

/** Why a condition is refused as given, or null (pure; the task's own checks are separate). */
export function conditionRefusal(until: WaitUntil): string | null {
  if (until === 'exit') return null;
  if ('outputMatches' in until) {
    const c = compileOutputPattern(until.outputMatches);
    return c.ok ? null : c.reason;
  }
  // Checked on the sandbox host by the runner's Probe; the runner also resolves symlinks.
  if ('portOpen' in until) return null;
  const p = until.fileExists;
  if (p.includes('\0') || p.startsWith('/') || p.split('/').includes('..')) return 'fileExists must be a path relative to the workspace, without ".."';
  return null;
}

/** Where a line scan stands: the bytes of the unfinished last line (capped) and the offset that line starts at. */
export interface ScanCarry {
  readonly bytes: Uint8Array;
  readonly lineOffset: number;
  /** Offset of the next byte to scan. */
  readonly nextOffset: number;
}

const decoder = new TextDecoder('utf-8');
const MAX_CARRY_BYTES = CONDITION_LIMITS.lineChars * 4;

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};

const lineText = (bytes: Uint8Array): string => decoder.decode(bytes).replace(/\r$/, '').slice(0, CONDITION_LIMITS.lineChars);

/**
 * Scans output bytes (starting at `carry.nextOffset`) for the first line matching `regex`. Lines are
 * decoded for matching only (invalid UTF-8 replaced) and cut to CONDITION_LIMITS.lineChars, so a
 * pattern runs on bounded input. `final`: no more output will come, so an unfinished last line is
 * matched too. Answers the match (its text and the offset its line starts at) or the new carry.
 */
export function scanLines(regex: RegExp, chunk: Uint8Array, carry: ScanCarry, final: boolean): { match: { line: string; offset: number } | null; carry: ScanCarry } {
  let pending = carry.bytes;
  let lineOffset = carry.lineOffset;
  let pos = carry.nextOffset;
  let start = 0;
  for (let i = 0; i < chunk.length; i++) {
    if (chunk[i] !== 0x0a) continue;
    const line = lineText(concat(pending, chunk.subarray(start, i)));
    if (regex.test(line)) return { match: { line, offset: lineOffset }, carry: { bytes: new Uint8Array(0), lineOffset: pos + i + 1, nextOffset: pos + i + 1 } };
    pending = new Uint8Array(0);
    start = i + 1;
    lineOffset = pos + i + 1;
  }
  // An endless line is kept only up to what can still change the verdict.
  const rest = concat(pending, chunk.subarray(start)).subarray(0, MAX_CARRY_BYTES);
  pos += chunk.length;
  if (final && rest.length > 0) {
    const line = lineText(rest);
    if (regex.test(line)) return { match: { line, offset: lineOffset }, carry: { bytes: new Uint8Array(0), lineOffset: pos, nextOffset: pos } };
  }
  return { match: null, carry: { bytes: rest, lineOffset, nextOffset: pos } };
}
