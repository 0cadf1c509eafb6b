import type { Logger, RunnerRecord } from '@handplane/platform';

/** Where the runner announces itself (the NATS KV registry in production). */
export interface RegistryPort {
  heartbeat(record: RunnerRecord): Promise<void>;
  deregister(runnerId: string): Promise<void>;
}

export interface Heartbeat {
  /** Stops beating and removes the record, so the coordinator stops choosing this runner at once. */
  stop(): Promise<void>;
}

/**
 * Writes the runner's record now and every `intervalMs`. A failed beat is logged and retried at the
 * next tick: the registry treats a runner as lost only after RUNNER_LOST_AFTER_MS of silence.
 */
export async function startHeartbeat(registry: RegistryPort, record: () => RunnerRecord, intervalMs: number, logger: Logger): Promise<Heartbeat> {
  let inFlight: Promise<void> | null = null;
  let failing = false;
  const beat = () => {
    // A slow registry never piles up beats: one at a time.
    if (inFlight) return inFlight;
    inFlight = registry.heartbeat(record()).then(
      () => {
        if (failing) logger.info('heartbeat restored');
        failing = false;
      },
      (err) => {
        if (!failing) logger.warn({ err }, 'heartbeat failed');
        failing = true;
      },
    ).finally(() => (inFlight = null));
    return inFlight;
  };
  await beat();
  const timer = setInterval(() => void beat(), intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
      await registry.deregister(record().runnerId).catch((err) => logger.warn({ err }, 'deregister failed'));
    },
  };
}
