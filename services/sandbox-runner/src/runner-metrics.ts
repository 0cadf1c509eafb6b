import { ServiceMetrics } from '@handplane/platform';
import type { Runner } from './app/runner';

/**
 * The runner's `/metrics`: commands running against capacity, and spool bytes written but not yet
 * acknowledged by the ingestor (output waiting to be made durable), plus the gRPC timings added by
 * `serveRunner`.
 */
export function runnerMetrics(): { metrics: ServiceMetrics; watch(runner: Runner, capacity: number): void } {
  const metrics = new ServiceMetrics('sandbox-runner');
  return {
    metrics,
    watch(runner, capacity) {
      metrics.gauge('handplane_runner_commands_running', 'Commands running on this runner', [], async () => runner.running);
      metrics.gauge('handplane_runner_capacity', 'Commands this runner accepts at once', [], async () => capacity);
      metrics.gauge('handplane_runner_spool_unacked_bytes', 'Output bytes in the spool not yet acknowledged by the ingestor (ingestion lag seen from the runner)', [], async () => runner.spoolBytes);
    },
  };
}
