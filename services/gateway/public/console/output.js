// A task's output as the console holds it: the text of bytes [start, end) of the Command Log,
// fed by live `command.output` events and by slices of GET /v1/tasks/:id/output.

/** Length of the prefix of `b` that ends on a whole UTF-8 character. */
export function wholeUtf8(b) {
  let i = b.length - 1;
  let back = 0;
  while (i >= 0 && back < 3 && (b[i] & 0xc0) === 0x80) (i--, back++);
  if (i < 0) return b.length;
  const lead = b[i];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > 1 && b.length - i < need ? i : b.length;
}

export class TaskOutput {
  /** Keeps at most `maxChars` of text: the tail, with `truncated` set. */
  constructor(maxChars = 1_000_000) {
    this.maxChars = maxChars;
    this.start = 0;
    this.end = 0;
    this.chunks = [];
    this.chars = 0;
    this.truncated = false;
    // Bumped whenever held text is dropped or replaced (a view must redraw, not append).
    this.generation = 0;
  }

  get text() {
    if (this.chunks.length > 1) this.chunks = [this.chunks.join('')];
    return this.chunks[0] ?? '';
  }

  /** The last `n` characters (what the conversation shows inline). */
  tail(n) {
    const t = this.text;
    return t.length > n ? t.slice(t.length - n) : t;
  }

  push(text, bytes) {
    this.chunks.push(text);
    this.chars += text.length;
    this.end += bytes;
    if (this.chars > this.maxChars * 1.25) {
      const t = this.text.slice(-this.maxChars);
      this.chunks = [t];
      this.chars = t.length;
      this.truncated = true;
      this.generation++;
    }
  }

  /** A live chunk: 'ok' appended, 'dup' already held, 'gap' bytes are missing before it. */
  live(offset, bytes, text) {
    if (offset + bytes <= this.end) return 'dup';
    if (offset !== this.end) return 'gap';
    this.push(text, bytes);
    return 'ok';
  }

  /** Bytes read from `from`; overlap with what is held is skipped. Returns how many bytes were taken. */
  slice(from, bytes, last) {
    if (from > this.end) return 0;
    const fresh = bytes.subarray(this.end - from);
    const n = last ? fresh.length : wholeUtf8(fresh);
    if (n === 0) return 0;
    // Invalid sequences show as U+FFFD; the bytes themselves stay byte-exact in the API.
    this.push(new TextDecoder().decode(fresh.subarray(0, n)), n);
    return n;
  }

  /** Forgets what is held and starts over at `offset` (to show only the tail of a long log). */
  skipTo(offset) {
    this.start = this.end = offset;
    this.chunks = [];
    this.chars = 0;
    this.truncated = offset > 0;
    this.generation++;
  }
}
