import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@handplane/contracts';
import { createLogger, RunnerClients, unary } from '@handplane/platform';
import type { ExecRequest, ExecResponse, LogRecord, RunnerClient } from '@handplane/proto';
import { startRunner } from '../../services/sandbox-runner/src/service';

/** Percentile of a sorted-on-demand sample (nearest rank). */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export const fmt = (n: number, digits = 2) => n.toFixed(digits);

/** A runner in this process with its own data dir (NATS must be up: npm run infra). */
export async function benchRunner(sandbox: string) {
  const dir = await mkdtemp(join(tmpdir(), 'hp-bench-'));
  const vars = { RUNNER_SANDBOX: sandbox, RUNNER_ON_SHUTDOWN: 'stop', RUNNER_CAPACITY: '1000' };
  const config = loadConfig({ NATS_PREFIX: `bench${process.pid}${sandbox}`, RUNNER_HOST: '127.0.0.1', RUNNER_PORT: '0', RUNNER_HTTP_PORT: '0', ...vars });
  const runner = await startRunner(config, { dataDir: dir, env: vars, logger: createLogger('bench', 'warn') });
  const clients = new RunnerClients();
  const client = clients.get(`127.0.0.1:${runner.grpcPort}`);
  let n = 0;
  return {
    runner,
    client,
    /** Exec + a following ReadLog; resolves with the time to the first chunk, the bytes and the time to the exit record. */
    async run(command: string): Promise<{ firstByteMs: number; totalMs: number; bytes: number }> {
      const t0 = performance.now();
      const commandId = `b${process.pid}-${++n}`;
      await unary<ExecRequest, ExecResponse>(client.exec.bind(client), { commandId, taskId: commandId, conversationId: 'bench', tenant: 'bench', generation: { epoch: 1, attempt: 1 }, command, cwd: '', env: {}, timeoutMs: 0 });
      return follow(client, commandId, t0);
    },
    /** ReadLog of a finished command from offset 0 (pure replay from the spool). */
    replay: (commandId: string) => follow(client, commandId, performance.now()),
    lastId: () => `b${process.pid}-${n}`,
    async stop() {
      clients.close();
      await runner.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function follow(client: RunnerClient, commandId: string, t0: number): Promise<{ firstByteMs: number; totalMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    let first = -1;
    let bytes = 0;
    const call = client.readLog({ commandId, fromOffset: 0, follow: true, maxChunkBytes: 0 });
    call.on('data', (r: LogRecord) => {
      if (r.record?.$case !== 'chunk') return;
      if (first < 0) first = performance.now() - t0;
      bytes += r.record.value.data.length;
    });
    call.on('error', reject);
    call.on('end', () => resolve({ firstByteMs: first, totalMs: performance.now() - t0, bytes }));
  });
}

/** Sandboxes to measure: BENCH_SANDBOX (comma separated), else whatever 'auto' picks. */
export const sandboxes = () => (process.env.BENCH_SANDBOX ?? 'auto').split(',');
