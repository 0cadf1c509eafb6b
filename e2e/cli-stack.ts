import { type PassThrough, Readable } from 'node:stream';
import { loadConfig } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import { main, type Io } from '../cli/src/main';
import { startRuntime } from '../services/agent-runtime/src/service';
import { startGateway } from '../services/gateway/src/service';
import { startIngestor } from '../services/log-ingestor/src/service';
import { startRunner } from '../services/sandbox-runner/src/service';
import { startCoordinator } from '../services/task-coordinator/src/service';
import { EPHEMERAL_SERVICE_PORTS, IN_PROCESS_RUNNER, stackResources, testLogLevel as level } from './stack-common';

/** What one CLI invocation did: its exit code and the bytes it wrote. */
export interface CliResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** A CLI invocation still running: interrupt it (Ctrl-C) or wait for it. */
export interface RunningCli {
  readonly done: Promise<CliResult>;
  readonly stdout: () => Buffer;
  readonly stderr: () => string;
  interrupt(): void;
}

/**
 * The whole system in-process (gateway, coordinator, runner, ingestor, agent runtime) on the real
 * NATS (own prefix) and Postgres (own database), and the `handplane` CLI run against it through
 * its `main(argv, io)`, with stdin, stdout and stderr captured. This is an app-level test, so it
 * may import every service (the CLI package itself may not).
 */
export async function startCliStack(label: string, env: Record<string, string> = {}) {
  const resources = await stackResources(label);
  const { dataDir } = resources;
  const vars: Record<string, string> = {
    ...resources.vars,
    ...EPHEMERAL_SERVICE_PORTS,
    ...IN_PROCESS_RUNNER,
    JWT_SECRET: 'cli-test-secret',
    STOP_GRACE_MS: '500',
    LOG_LEVEL: level(),
    ...env,
  };
  const config = loadConfig(vars);
  const log = (name: string) => createLogger(name, level());
  const stops: [string, () => Promise<unknown>][] = [];
  const stop = async () => {
    for (const [name, s] of stops.splice(0).reverse()) {
      const t0 = Date.now();
      await s().catch(() => undefined);
      // A slow stop is worth knowing about (it usually means something was left running).
      if (Date.now() - t0 > 5000) console.warn(`${name} took ${Date.now() - t0} ms to stop`);
    }
    await resources.release();
  };
  let baseUrl = '';
  try {
    const runner = await startRunner(config, { dataDir, env: vars, heartbeatMs: 500, logger: log('sandbox-runner') });
    stops.push(['runner', () => runner.stop()]);
    const coordinator = await startCoordinator(config, { logger: log('task-coordinator') });
    stops.push(['coordinator', () => coordinator.stop()]);
    const ingestor = await startIngestor(config, { logger: log('log-ingestor'), claimIntervalMs: 100 });
    stops.push(['ingestor', () => ingestor.stop()]);
    const runtime = await startRuntime(config, { logger: log('agent-runtime'), sweepMs: 500 });
    stops.push(['runtime', () => runtime.stop()]);
    const gateway = await startGateway(config, { logger: log('gateway'), host: '127.0.0.1' });
    stops.push(['gateway', () => gateway.stop()]);
    baseUrl = `http://127.0.0.1:${gateway.httpPort}`;
  } catch (e) {
    await stop();
    throw e;
  }

  /** Starts `handplane <argv>` with HANDPLANE_URL set to this stack; `stdin` is fed and closed. */
  function start(argv: string[], o: { env?: Record<string, string>; stdin?: string | PassThrough } = {}): RunningCli {
    const out: Buffer[] = [];
    let err = '';
    const interrupts = new Set<() => void>();
    const io: Io = {
      out: (chunk) => void out.push(Buffer.from(chunk)),
      err: (text) => void (err += text),
      stdin: typeof o.stdin === 'string' || o.stdin === undefined ? Readable.from([o.stdin ?? '']) : o.stdin,
      env: { HANDPLANE_URL: baseUrl, HANDPLANE_PROGRESS_MS: '400', ...o.env },
      interactive: false,
      onInterrupt(handler) {
        interrupts.add(handler);
        return () => void interrupts.delete(handler);
      },
    };
    const done = main(argv, io).then((code) => ({ code, stdout: Buffer.concat(out), stderr: err }));
    return { done, stdout: () => Buffer.concat(out), stderr: () => err, interrupt: () => interrupts.forEach((h) => h()) };
  }

  return {
    baseUrl,
    vars,
    start,
    /** Runs `handplane <argv>` to its end. */
    cli: (argv: string[], o: { env?: Record<string, string>; stdin?: string } = {}) => start(argv, o).done,
    stop,
  };
}
