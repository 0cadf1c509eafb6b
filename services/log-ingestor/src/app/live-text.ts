/**
 * Text for the live view (`command.output`). Bytes stay bytes in the Command Log; only this display
 * copy replaces invalid UTF-8. A character cut by a batch boundary is carried to the next batch so
 * that valid text never shows replacement characters.
 */

/** One `command.output` event's worth of text. */
export interface TextSlice {
  readonly offset: number;
  readonly bytes: number;
  readonly text: string;
}

const decoder = new TextDecoder('utf-8', { fatal: false });
const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** Length of the UTF-8 sequence a lead byte announces (1 for anything that is not a lead byte). */
function sequenceLength(b: number): number {
  if (b >= 0xf0 && b <= 0xf4) return 4;
  if (b >= 0xe0) return b <= 0xef ? 3 : 1;
  if (b >= 0xc2) return 2;
  return 1;
}

/** Bytes at the end of `data` that start a valid-looking multi-byte sequence still missing bytes. */
export function incompleteTail(data: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, data.length); back++) {
    const b = data[data.length - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for its lead
    return sequenceLength(b) > back ? back : 0;
  }
  return 0;
}

/** The largest cut ≤ `limit` that does not split a multi-byte sequence (when one can be found). */
function cutAt(data: Uint8Array, from: number, limit: number): number {
  const end = Math.min(data.length, from + limit);
  if (end === data.length) return end;
  const tail = incompleteTail(data.subarray(from, end));
  return end - tail > from ? end - tail : end;
}

/**
 * Splits bytes into slices whose text is at most `maxTextBytes` of UTF-8 (replacement characters
 * take 3 bytes for 1 invalid byte, so a slice shrinks until its text fits).
 */
export function splitForDisplay(offset: number, data: Uint8Array, maxTextBytes = 32 * 1024): TextSlice[] {
  const out: TextSlice[] = [];
  let at = 0;
  while (at < data.length) {
    let limit = maxTextBytes;
    for (;;) {
      const end = cutAt(data, at, limit);
      const text = decoder.decode(data.subarray(at, end));
      if (utf8Length(text) <= maxTextBytes || end - at <= 1) {
        out.push({ offset: offset + at, bytes: end - at, text });
        at = end;
        break;
      }
      limit = Math.max(1, Math.floor((end - at) / 2));
    }
  }
  return out;
}

/** The live view of one command: feed it committed batches in order, get slices back. */
export class LiveText {
  private carry: Uint8Array = new Uint8Array(0);

  constructor(private readonly maxTextBytes = 32 * 1024) {}

  /** `final` flushes a held-back partial character (the output ended). */
  push(offset: number, data: Uint8Array, final = false): TextSlice[] {
    const start = offset - this.carry.length;
    const all = this.carry.length ? concat(this.carry, data) : data;
    const hold = final ? 0 : incompleteTail(all);
    this.carry = all.slice(all.length - hold);
    return splitForDisplay(start, all.subarray(0, all.length - hold), this.maxTextBytes);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
