/** Where the CLI reads and writes: the process, or a test's buffers. */
export interface Io {
  /** Standard output (bytes pass through untouched: command output may be binary). */
  out(chunk: string | Uint8Array): void;
  /** Standard error: progress, notes and errors. */
  err(text: string): void;
  readonly stdin: NodeJS.ReadableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** True when a person watches stderr (progress may redraw a line). */
  readonly interactive: boolean;
  /** Calls `handler` on Ctrl-C (SIGINT) until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
}

/** The real process. */
export function processIo(): Io {
  return {
    out: (chunk) => void process.stdout.write(chunk),
    err: (text) => void process.stderr.write(text),
    stdin: process.stdin,
    env: process.env,
    interactive: Boolean(process.stderr.isTTY),
    onInterrupt(handler) {
      process.on('SIGINT', handler);
      return () => void process.off('SIGINT', handler);
    },
  };
}

/** A usage mistake: the message and exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
