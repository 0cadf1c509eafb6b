/**
 * Interactive prompt detection (`task.awaiting_input`). It lives in the ingestor because the ingestor
 * already sees every byte of a running command as it arrives; it costs one small tail buffer per
 * command being read and a regular expression per chunk, and nothing at all for output that ends in
 * a newline. A prompt is the output's last line, with no newline after it, that looks like a
 * question (`[y/N]`, `(yes/no)`, `Password:`, `? Pick one`, a line ending in `?`, `:` or `>`), followed by quiet:
 * no more output for `quietMs`. It is a hint for people and the agent, not a fact: the command may
 * just be slow. Each prompt is reported once (keyed by the offset where its output ended).
 */

/** Bytes of the output's end kept per command (a prompt line longer than this is cut at its start). */
const TAIL_BYTES = 512;
/** Longest prompt text reported. */
const MAX_PROMPT_CHARS = 200;

const decoder = new TextDecoder('utf-8', { fatal: false });
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
const QUESTION = [
  /[[(]\s*(y|yes)\s*\/\s*(n|no)\s*[\])]\s*[:?]?$/i,
  /[[(]\s*(n|no)\s*\/\s*(y|yes)\s*[\])]\s*[:?]?$/i,
  /\b(password|passphrase|passcode|pin|otp|token|username|login)\b[^:\n]{0,60}:$/i,
  /[?:>]$/,
  // Inquirer-style prompts: `? Pick a template (Use arrow keys)`.
  /^\?\s+\S/,
];

/** The prompt the output ends with, or null (ends with a newline, or its last line is no question). */
export function promptOf(tail: Uint8Array): string | null {
  const text = decoder.decode(tail).replace(ANSI, '');
  if (text.length === 0 || text.endsWith('\n')) return null;
  const line = text.slice(Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r')) + 1).trim();
  if (line.length === 0 || !QUESTION.some((q) => q.test(line))) return null;
  return line.length > MAX_PROMPT_CHARS ? line.slice(line.length - MAX_PROMPT_CHARS) : line;
}

/** A prompt to report: its text and the offset where the output ended. */
export interface DuePrompt {
  readonly offset: number;
  readonly prompt: string;
}

/** Follows one command's output (in order) and says when its end has been a prompt for `quietMs`. */
export class PromptWatch {
  private tail = new Uint8Array(0);
  private end = -1;
  private lastAt = 0;
  private candidate: string | null = null;
  private reported = -1;

  /** `quietMs` ≤ 0 turns detection off. */
  constructor(private readonly quietMs: number) {}

  /** More output, ending at offset `end`, arrived at `now` (monotonic ms). */
  push(end: number, data: Uint8Array, now: number): void {
    if (this.quietMs <= 0 || data.length === 0) return;
    const joined = new Uint8Array(Math.min(TAIL_BYTES, this.tail.length + data.length));
    const fromData = Math.min(data.length, joined.length);
    const fromTail = joined.length - fromData;
    joined.set(this.tail.subarray(this.tail.length - fromTail), 0);
    joined.set(data.subarray(data.length - fromData), fromTail);
    this.tail = joined;
    this.end = end;
    this.lastAt = now;
    this.candidate = promptOf(joined);
  }

  /** Milliseconds until the current prompt is due; undefined when nothing is pending. */
  dueIn(now: number): number | undefined {
    if (this.candidate === null || this.end === this.reported) return undefined;
    return Math.max(0, this.lastAt + this.quietMs - now);
  }

  /** The prompt when it is due (then never again for the same output end), else null. */
  take(now: number): DuePrompt | null {
    const due = this.dueIn(now);
    if (due === undefined || due > 0 || this.candidate === null) return null;
    this.reported = this.end;
    return { offset: this.end, prompt: this.candidate };
  }
}
