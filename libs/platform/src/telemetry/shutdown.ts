import type { Tracing } from './tracing';

/** How long the exporter may take to send the last spans at shutdown before the process exits anyway. */
export const TRACE_FLUSH_TIMEOUT_MS = 5_000;

export interface StopOnSignalsOptions {
  /** Stops the service (closes its servers, consumers and connections). */
  readonly stop: () => Promise<void>;
  /** What `setupTracing` installed: flushed after `stop`, so the spans of the stop itself are sent too. */
  readonly tracing: Tracing;
  /** Told once the signal arrives, and when the stop fails. */
  readonly log: (event: { signal: string } | { err: unknown }, message: string) => void;
  /** Test seam: exits the process (default `process.exit`). */
  readonly exit?: (code: number) => void;
  readonly flushTimeoutMs?: number;
}

/**
 * The service's shutdown on SIGTERM and SIGINT (once, whichever comes first): stop the service,
 * then flush the spans still buffered in the exporter (the batch sends every second: without the
 * flush, the spans of the last second, the stop's among them, were lost), then exit 0 (1 when the
 * stop failed). A flush that hangs (a collector that does not answer) is given up after
 * `flushTimeoutMs`: tracing never holds a shutdown.
 */
export function stopOnSignals(o: StopOnSignalsOptions): (signal: string) => Promise<void> {
  let stopping: Promise<void> | undefined;
  const exit = o.exit ?? ((code: number) => process.exit(code));
  const shutdown = (signal: string): Promise<void> =>
    (stopping ??= (async () => {
      o.log({ signal }, 'stopping');
      let code = 0;
      try {
        await o.stop();
      } catch (err) {
        o.log({ err }, 'stop failed');
        code = 1;
      }
      await flushTracing(o.tracing, o.flushTimeoutMs ?? TRACE_FLUSH_TIMEOUT_MS);
      exit(code);
    })());
  // A second signal changes nothing: the stop under way finishes (a runner must not die half-stopped).
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}

/** Flushes and shuts the exporter down, waiting at most `timeoutMs`; never throws. */
export async function flushTracing(tracing: Tracing, timeoutMs = TRACE_FLUSH_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([tracing.shutdown().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs).unref()))]);
  clearTimeout(timer);
}
