// Reads a conversation's Server-Sent Events with fetch(), so the bearer token goes in a header and
// never into a URL. Reconnects by itself with backoff and resumes after the last event it handed
// out (Last-Event-ID), and drops any event it has already seen: after a network drop every event
// shows up once, none twice.

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** A fatal answer: reconnecting would not help (401, 403, 404). */
export class StreamRefused extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * Parses SSE text incrementally (the WHATWG rules that matter here): blocks end with a blank line;
 * `id`, `event` and `data` fields; lines starting with `:` are comments (our keep-alive pings).
 */
export class SseParser {
  constructor(onEvent, onComment = () => {}) {
    this.buf = '';
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.reset();
  }
  reset() {
    this.id = undefined;
    this.event = '';
    this.data = [];
  }
  push(text) {
    this.buf += text;
    const lines = this.buf.split(/\r\n|\r|\n/);
    // The last piece may be an unfinished line (or a lone \r whose \n is still coming).
    this.buf = lines.pop();
    for (const line of lines) this.line(line);
  }
  line(line) {
    if (line === '') {
      if (this.data.length || this.event) this.onEvent({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      this.reset();
      return;
    }
    if (line.startsWith(':')) return this.onComment(line.slice(1).trim());
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') this.id = value;
    else if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

export class EventStream {
  /**
   * @param {object} o
   * @param {string} o.url           the events URL (no query)
   * @param {() => object} o.headers the auth headers (read at each connect)
   * @param {number} o.after         resume after this event id (0: from the start)
   * @param {(e: {id:number, event:string, data:any}) => void} o.onEvent
   * @param {(s: {state:string, retryInMs?:number, error?:Error}) => void} o.onState
   */
  constructor({ url, headers, after = 0, onEvent, onState }) {
    Object.assign(this, { url, headers, onEvent, onState });
    this.lastId = after;
    this.stopped = new AbortController();
    this.attempt = 0;
    this.connection = null;
    this.pingEveryMs = 0;
    this.online = () => this.reconnectNow();
    this.offline = () => this.connection && this.connection.abort();
    window.addEventListener('online', this.online);
    window.addEventListener('offline', this.offline);
    this.wake = null;
    this.done = this.loop();
  }

  stop() {
    this.stopped.abort();
    if (this.connection) this.connection.abort();
    window.removeEventListener('online', this.online);
    window.removeEventListener('offline', this.offline);
  }

  /** Ends the current connection (or the wait before the next) and connects again at once. */
  reconnectNow() {
    this.attempt = 0;
    if (this.connection) this.connection.abort();
    if (this.wake) this.wake.abort();
  }

  async loop() {
    const signal = this.stopped.signal;
    while (!signal.aborted) {
      try {
        await this.connectOnce();
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof StreamRefused) {
          this.onState({ state: 'refused', error: e });
          return;
        }
      }
      if (signal.aborted) return;
      // 0.5 s, 1 s, 2 s, … up to 15 s, with jitter so a gateway restart is not met by a stampede.
      const base = Math.min(15000, 500 * 2 ** Math.min(this.attempt, 5));
      const wait = Math.round(base * (0.8 + Math.random() * 0.4));
      this.attempt++;
      this.onState({ state: navigator.onLine === false ? 'offline' : 'reconnecting', retryInMs: wait });
      this.wake = new AbortController();
      await sleep(wait, AbortSignal.any([signal, this.wake.signal]));
      this.wake = null;
    }
  }

  async connectOnce() {
    const conn = new AbortController();
    this.connection = conn;
    const headers = { ...this.headers(), accept: 'text/event-stream' };
    if (this.lastId > 0) headers['last-event-id'] = String(this.lastId);
    const res = await fetch(this.url, { headers, cache: 'no-store', signal: conn.signal });
    if (res.status === 401 || res.status === 403 || res.status === 404) {
      let message = `the event stream answered ${res.status}`;
      try {
        message = (await res.json()).error.message;
      } catch {
        /* keep the status */
      }
      throw new StreamRefused(res.status, message);
    }
    if (!res.ok || !res.body) throw new Error(`the event stream answered ${res.status}`);
    this.attempt = 0;
    this.onState({ state: 'live' });
    await this.read(res.body.getReader(), conn);
  }

  async read(reader, conn) {
    // A silent connection is a dead one (a laptop lid, a proxy): the server pings, so give up after
    // three missed pings (45 s until the ping interval is known).
    let lastPing = 0;
    let watchdog;
    const arm = () => {
      clearTimeout(watchdog);
      const limit = this.pingEveryMs ? Math.max(3000, this.pingEveryMs * 3) : 45000;
      watchdog = setTimeout(() => conn.abort(), limit);
    };
    const parser = new SseParser(
      (e) => this.dispatch(e),
      () => {
        const now = performance.now();
        if (lastPing) this.pingEveryMs = now - lastPing;
        lastPing = now;
      },
    );
    const decoder = new TextDecoder();
    arm();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        arm();
        parser.push(decoder.decode(value, { stream: true }));
      }
    } finally {
      clearTimeout(watchdog);
      conn.abort();
    }
  }

  dispatch(e) {
    const id = Number(e.id);
    // Ids are stream sequences: anything at or below the last one was handed out already.
    if (!Number.isSafeInteger(id) || id <= this.lastId) return;
    let data = null;
    try {
      data = JSON.parse(e.data);
    } catch {
      data = e.data;
    }
    this.lastId = id;
    this.onEvent({ id, event: e.event, data });
  }
}
