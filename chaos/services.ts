/**
 * The five services, each its own process started from the built dist (as scripts/up.mjs does), so
 * that any one can be SIGKILLed, paused or restarted on its own. A runner may be started inside a
 * network namespace (`ip netns exec`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, sleep } from './infra';

export type ServiceName = 'sandbox-runner' | 'task-coordinator' | 'log-ingestor' | 'agent-runtime' | 'gateway';

export interface ServiceSpec {
  /** Unique label: the service name, or `runner-a` and the like for runners. */
  readonly label: string;
  readonly service: ServiceName;
  readonly env: Record<string, string>;
  /** Start inside this network namespace. */
  readonly netns?: string;
  /** HTTP port serving /readyz (reachable from the host). */
  readonly readyUrl?: string;
}

/** One service process that can be killed and started again with the same settings. */
export class ServiceProcess {
  private proc: ChildProcess | null = null;
  /** Set while the suite itself killed or stopped it (an exit then is expected). */
  private expectingExit = false;
  /** Exits nobody asked for: a crash is a finding. */
  readonly unexpectedExits: string[] = [];
  starts = 0;

  constructor(
    readonly spec: ServiceSpec,
    private readonly logFile: string,
  ) {}

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  start(): void {
    if (this.running) return;
    const main = join(ROOT, 'services', this.spec.service, 'dist', 'main.js');
    // setpriv --pdeathsig: if the suite itself dies (SIGKILL, a crash), its services die with it.
    const node = ['setpriv', '--pdeathsig', 'SIGKILL', '--', process.execPath, main];
    const [cmd, args] = this.spec.netns ? ['ip', ['netns', 'exec', this.spec.netns, ...node]] : [node[0]!, node.slice(1)];
    const p = spawn(cmd, args as string[], { env: { ...process.env, ...this.spec.env }, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.starts++;
    this.expectingExit = false;
    const tag = `${this.spec.label}#${this.starts}|`;
    for (const s of [p.stdout!, p.stderr!]) s.on('data', (d: Buffer) => appendFileSync(this.logFile, d.toString().split('\n').filter(Boolean).map((l) => `${tag} ${l}\n`).join('')));
    p.on('exit', (code, signal) => {
      if (this.expectingExit) return;
      this.unexpectedExits.push(`${this.spec.label} exited (${code ?? signal}) without being asked`);
      // As a supervisor (Kubernetes, systemd) would: the crash is counted, the service comes back.
      setTimeout(() => {
        if (!this.expectingExit && !this.running) this.start();
      }, 1000);
    });
    this.proc = p;
  }

  /** Waits for /readyz to answer 200 (or, without a URL, a short settling time). */
  async ready(timeoutMs = 60_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`${this.spec.label} exited while starting (see the chaos log)`);
      if (!this.spec.readyUrl) return;
      const r = await fetch(this.spec.readyUrl).catch(() => null);
      if (r?.status === 200) return;
      if (Date.now() > end) throw new Error(`${this.spec.label} not ready after ${timeoutMs} ms`);
      await sleep(200);
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (this.proc?.pid) process.kill(this.proc.pid, sig);
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || !this.running) return;
    this.expectingExit = true;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
  }

  /** SIGTERM (a clean stop), SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    const p = this.proc;
    if (!p || !this.running) return;
    this.expectingExit = true;
    const gone = new Promise((r) => p.once('exit', r));
    try {
      process.kill(p.pid!, 'SIGCONT');
    } catch {
      /* gone */
    }
    p.kill('SIGTERM');
    await Promise.race([gone, sleep(graceMs)]);
    if (this.running) {
      p.kill('SIGKILL');
      await gone;
    }
  }
}
