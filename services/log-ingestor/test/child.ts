import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from '@handplane/testing';

const ROOT = join(__dirname, '..', '..', '..');

/** An ingestor in its own process, killable with SIGKILL (a real crash: no clean stop, leases left to expire). */
export interface IngestorChild {
  readonly process: ChildProcess;
  /** Everything it printed (for a failure message). */
  output(): string;
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>;
}

/** Starts `test/ingestor-child.ts` with `env` on top of this process's environment; resolves once it is ready. */
export async function spawnIngestor(env: Record<string, string>): Promise<IngestorChild> {
  const code = "require('./scripts/ts-register.js').register(); require('./services/log-ingestor/test/ingestor-child.ts');";
  const child = spawn(process.execPath, ['-e', code], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const handle: IngestorChild = {
    process: child,
    output: () => out,
    async kill() {
      if (!gone()) child.kill('SIGKILL');
      await waitFor(gone, 10_000, 'the ingestor child to die', 20);
    },
  };
  try {
    await waitFor(() => {
      if (gone()) throw new Error(`ingestor child exited: ${out}`);
      return out.includes('ready');
    }, 60_000, 'the ingestor child to start', 50);
  } catch (e) {
    await handle.kill();
    throw e;
  }
  return handle;
}
