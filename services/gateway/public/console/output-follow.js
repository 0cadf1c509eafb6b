// Follows one task's output live (GET /v1/tasks/:id/output/follow, Server-Sent Events over fetch so
// the token stays in a header). Chunks are exact bytes at their offsets; after a network drop it
// reconnects from the offset it has reached (Last-Event-ID), so nothing is lost or repeated.
import { SseParser } from './sse.js';

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

function bytesOf(base64) {
  const bin = atob(base64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class OutputFollow {
  /**
   * @param {object} o
   * @param {string} o.taskId
   * @param {() => object} o.headers     auth headers, read at each connect
   * @param {() => number} o.offset      where to (re)start: the end of what the view holds
   * @param {(offset:number, bytes:Uint8Array) => void} o.onChunk
   * @param {(d:{droppedFrom:number, droppedTo:number, droppedBytes:number}) => void} o.onTruncated
   * @param {(d:{nextOffset:number, complete:boolean}) => void} o.onEnd   the last call
   */
  constructor(o) {
    Object.assign(this, o);
    this.stopped = new AbortController();
    this.done = this.loop();
  }

  stop() {
    this.stopped.abort();
  }

  async loop() {
    const signal = this.stopped.signal;
    let attempt = 0;
    while (!signal.aborted) {
      try {
        if (await this.connectOnce(signal)) return;
        attempt = 0;
      } catch (e) {
        if (signal.aborted) return;
        if (e && e.fatal) return;
      }
      await sleep(Math.min(10000, 500 * 2 ** Math.min(attempt++, 5)), signal);
    }
  }

  /** True when the stream said `end` (or refused for good). */
  async connectOnce(signal) {
    const url = `/v1/tasks/${encodeURIComponent(this.taskId)}/output/follow`;
    const headers = { ...this.headers(), accept: 'text/event-stream', 'last-event-id': String(this.offset()) };
    const res = await fetch(url, { headers, cache: 'no-store', signal });
    if (res.status === 401 || res.status === 403 || res.status === 404) throw Object.assign(new Error(`follow answered ${res.status}`), { fatal: true });
    if (!res.ok || !res.body) throw new Error(`follow answered ${res.status}`);
    let ended = false;
    const parser = new SseParser((e) => {
      if (ended) return;
      const d = JSON.parse(e.data);
      if (e.event === 'chunk') this.onChunk(d.offset, bytesOf(d.data));
      else if (e.event === 'truncated') this.onTruncated(d);
      else if (e.event === 'end') {
        ended = true;
        this.onEnd(d);
      }
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done || ended) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    if (ended) reader.cancel().catch(() => undefined);
    return ended;
  }
}
