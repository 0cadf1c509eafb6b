import type { Logger } from '@handplane/platform';

/** A background loop; `stop` waits for the run in progress. */
export interface Periodic {
  stop(): Promise<void>;
}

/**
 * Runs `fn` now and then every `intervalMs` after the previous run ended (runs never overlap).
 * A failing run is logged and the loop goes on.
 */
export function every(intervalMs: number, name: string, logger: Logger, fn: () => Promise<unknown>): Periodic {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = fn()
      .then(() => undefined)
      .catch((e) => logger.warn({ err: e, loop: name }, 'periodic run failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
