import { readSse, SseParser, type SseItem } from './sse';

/** Feeds `chunks` one by one and collects every item. */
function parse(chunks: string[]): SseItem[] {
  const p = new SseParser();
  return chunks.flatMap((c) => p.push(c));
}

const ev = (id: string | undefined, event: string | undefined, data: string | undefined): SseItem => ({ type: 'event', id, event, data });

describe('SseParser', () => {
  const frames = 'id: 1\nevent: a\ndata: {"n":1}\n\n: ping\n\nid: 2\nevent: b\ndata: {"n":2}\n\n';
  const expected = [ev('1', 'a', '{"n":1}'), { type: 'comment', line: ': ping' }, ev('2', 'b', '{"n":2}')];

  it('parses frames and comments', () => {
    expect(parse([frames])).toEqual(expected);
  });

  it('gives the same items whatever the chunk boundaries, including inside a line', () => {
    for (let cut = 1; cut < frames.length; cut++) expect(parse([frames.slice(0, cut), frames.slice(cut)])).toEqual(expected);
    expect(parse([...frames])).toEqual(expected);
  });

  it('takes CRLF and lone CR as line ends, even with CR and LF in different chunks', () => {
    const crlf = frames.replace(/\n/g, '\r\n');
    for (let cut = 1; cut < crlf.length; cut++) expect(parse([crlf.slice(0, cut), crlf.slice(cut)])).toEqual(expected);
    expect(parse([...crlf])).toEqual(expected);
    // A final lone CR is only known to end a line once the next character is not LF.
    expect(parse([frames.replace(/\n/g, '\r'), '\r'])).toEqual(expected);
  });

  it('holds back a trailing CR until it knows whether LF follows', () => {
    const p = new SseParser();
    expect(p.push('data: x\r\n\r')).toEqual([]);
    expect(p.push('\n')).toEqual([ev(undefined, undefined, 'x')]);
  });

  it('joins multi-line data with newlines and keeps a frame without id', () => {
    expect(parse(['event: log\ndata: one\ndata:two\ndata:  three\ndata\n\n'])).toEqual([ev(undefined, 'log', 'one\ntwo\n three\n')]);
  });

  it('reports no id or data when the frame had none, and does not carry an id to the next frame', () => {
    expect(parse(['id: 5\nevent: a\n\nevent: b\ndata: {}\n\n'])).toEqual([ev('5', 'a', undefined), ev(undefined, 'b', '{}')]);
  });

  it('makes no frame of blank lines, comments, retry or unknown fields, and drops an unfinished frame', () => {
    expect(parse(['\n\n: hello\n\nretry: 100\nfoo: bar\n\nid: 9\ndata: cut'])).toEqual([{ type: 'comment', line: ': hello' }]);
  });

  it('skips a leading byte-order mark', () => {
    expect(parse(['\ufeffdata: x\n\n'])).toEqual([ev(undefined, undefined, 'x')]);
  });
});

describe('readSse', () => {
  const bytes = (s: string) => new TextEncoder().encode(s);

  it('decodes a byte stream whose chunks split a multi-byte character', async () => {
    const all = bytes('event: m\ndata: "héllo ✓"\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < all.length; i++) c.enqueue(all.subarray(i, i + 1));
        c.close();
      },
    });
    const items: SseItem[] = [];
    for await (const item of readSse(body)) items.push(item);
    expect(items).toEqual([ev(undefined, 'm', '"héllo ✓"')]);
  });

  it('reads an async iterable of text, and cancels the body when the loop leaves early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(bytes('data: 1\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const item of readSse(body)) {
      expect(item).toEqual(ev(undefined, undefined, '1'));
      break;
    }
    expect(cancelled).toBe(true);

    async function* text() {
      yield 'data: a\r';
      yield '\n\r\ndata: b\n\n';
    }
    const items: SseItem[] = [];
    for await (const item of readSse(text())) items.push(item);
    expect(items).toEqual([ev(undefined, undefined, 'a'), ev(undefined, undefined, 'b')]);
  });
});
