/**
 * One Server-Sent Events parser for every test client (gateway tests, e2e, bench, chaos), so that
 * they all read the stream the way a browser's EventSource splits it: lines end in LF, CRLF or CR
 * (a chunk may end between CR and LF), a line starting with ':' is a comment, `field: value` drops
 * one space after the colon, several data lines join with '\n', and a blank line ends the frame.
 */

/** What the stream carried: a frame with at least one field, or a comment line (`: ping`). */
export type SseItem =
  | {
      readonly type: 'event';
      /** This frame's `id` field (undefined when it had none; not carried over from earlier frames). */
      readonly id: string | undefined;
      readonly event: string | undefined;
      /** The data lines joined with '\n'; undefined when the frame had no data line. */
      readonly data: string | undefined;
    }
  | { readonly type: 'comment'; /** The whole line, colon included. */ readonly line: string };

/**
 * Incremental parser: `push` text as it arrives, get back the items it completed. A frame still
 * open when the stream ends is dropped, as EventSource does.
 */
export class SseParser {
  private buf = '';
  private id: string | undefined;
  private event: string | undefined;
  private data: string[] | undefined;
  private fields = false;
  private first = true;

  push(text: string): SseItem[] {
    this.buf += text;
    if (this.first && this.buf.length > 0) {
      // A leading byte-order mark is not part of the first field name.
      if (this.buf.charCodeAt(0) === 0xfeff) this.buf = this.buf.slice(1);
      this.first = false;
    }
    const out: SseItem[] = [];
    let start = 0;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = start;
      const hit = m.exec(this.buf);
      if (!hit) break;
      // A CR as the last character may be the first half of a CRLF split across chunks: wait for more.
      if (hit[0] === '\r' && hit.index === this.buf.length - 1) break;
      this.line(this.buf.slice(start, hit.index), out);
      start = hit.index + hit[0].length;
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  private line(line: string, out: SseItem[]): void {
    if (line === '') {
      if (this.fields) out.push({ type: 'event', id: this.id, event: this.event, data: this.data?.join('\n') });
      this.id = this.event = this.data = undefined;
      this.fields = false;
      return;
    }
    if (line.startsWith(':')) {
      out.push({ type: 'comment', line });
      return;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'id') this.id = value;
    else if (name === 'event') this.event = value;
    else if (name === 'data') (this.data ??= []).push(value);
    else return; // retry and unknown fields do not make a frame
    this.fields = true;
  }
}

/**
 * Reads an SSE body (a fetch `Response.body`, or any async iterable of bytes or text) to its end,
 * yielding events and comments as they complete. Aborting the fetch rejects the pending read, so the
 * loop over this generator throws the AbortError; leaving the loop early cancels the body.
 */
export async function* readSse(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>): AsyncGenerator<SseItem, void, undefined> {
  const parser = new SseParser();
  const dec = new TextDecoder();
  const text = (chunk: Uint8Array | string) => (typeof chunk === 'string' ? chunk : dec.decode(chunk, { stream: true }));
  if (!('getReader' in body)) {
    for await (const chunk of body) yield* parser.push(text(chunk));
    return;
  }
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        return;
      }
      yield* parser.push(text(value));
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}
