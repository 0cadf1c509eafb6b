/**
 * The chaos suite's own infrastructure: a nats-server, a Postgres cluster, mTLS certificates and a
 * network namespace, all made in a temporary directory and torn down at the end. The machine's
 * shared NATS (4222) and Postgres (5432) are never touched: other people's tests run against them.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { migrate } from '@handplane/platform';

export const ROOT = join(__dirname, '..');
const PG_BIN = process.env.CHAOS_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A port nobody listens on right now (the kernel picks it). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until(what: string, timeoutMs: number, probe: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve(probe()).catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Removes what an earlier run that died without cleaning up left behind: namespaces named
 * `hpchaos-*-<pid>` whose suite process is gone, with whatever still runs inside them.
 */
export function reapLeftovers(log: (s: string) => void): void {
  const names = (spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '').split('\n').map((l) => l.split(' ')[0]!).filter((n) => /^hpchaos-(cut|gone)-\d+$/.test(n));
  for (const name of names) {
    const owner = Number(name.split('-').pop());
    let alive = true;
    try {
      process.kill(owner, 0);
    } catch {
      alive = false;
    }
    if (alive) continue;
    log(`removing ${name}, left by a run that died`);
    const ns = new Netns(name, '', '');
    (ns as unknown as { made: boolean }).made = true;
    ns.destroy();
  }
}

/** A nats-server with JetStream in `dir`, listening on every address (the namespaced runner reaches it over the veth). */
export class OwnNats {
  private proc: ChildProcess | null = null;
  constructor(
    readonly dir: string,
    readonly port: number,
    readonly monitorPort: number,
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    this.proc = spawn('nats-server', ['-js', '-sd', this.dir, '-a', '0.0.0.0', '-p', String(this.port), '-m', String(this.monitorPort)], { stdio: 'ignore' });
    const p = this.proc;
    await until('nats-server to answer', 20_000, async () => {
      if (p.exitCode !== null) throw new Error('nats-server exited');
      const r = await fetch(`http://127.0.0.1:${this.monitorPort}/healthz?js-enabled-only=true`).catch(() => null);
      return r?.status === 200;
    });
  }

  /** SIGKILL: what a crash or an OOM kill does. The store directory stays. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await Promise.race([gone, sleep(5000)]);
    if (p.exitCode === null) p.kill('SIGKILL');
  }
}

/** A Postgres cluster of our own (initdb as the `postgres` OS user), fsync on, trust auth on 127.0.0.1. */
export class OwnPostgres {
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/handplane`;
  }

  private asPostgres(bin: string, args: string[]): void {
    const r = spawnSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, bin), ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  }

  async init(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const pgUser = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
    const pgGroup = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim();
    chownSync(this.dir, Number(pgUser), Number(pgGroup));
    chmodSync(this.dir, 0o700);
    this.asPostgres('initdb', ['-D', join(this.dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-instructions', '-E', 'UTF8']);
    await this.start();
    // The template: the project's own migrations, run once like `npm run up` does.
    await migrate(this.url);
  }

  async start(): Promise<void> {
    const opts = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=on -c max_connections=200`;
    this.asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-l', join(this.dir, 'postgres.log'), '-o', opts, '-w', '-t', '60', 'start']);
    await until('postgres to accept connections', 30_000, () => portOpen(this.port));
  }

  /** `immediate`: every backend killed at once, WAL replay at the next start (what a crash does). */
  stop(mode: 'fast' | 'immediate' = 'fast'): void {
    if (!existsSync(join(this.dir, 'data', 'postmaster.pid'))) return;
    this.asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', '-t', '60', 'stop']);
  }
}

/** Development mTLS certificates (deploy/gen-certs.sh) with the namespaced runners' addresses in the SANs. */
export function makeCerts(dir: string, ips: string[]): { runner: Record<string, string>; client: Record<string, string> } {
  execFileSync('sh', [join(ROOT, 'deploy', 'gen-certs.sh'), dir, ...ips.map((ip) => `IP:${ip}`)], { stdio: 'ignore' });
  const files = (sub: string) => ({ RUNNER_TLS_CERT: join(dir, sub, 'tls.crt'), RUNNER_TLS_KEY: join(dir, sub, 'tls.key'), RUNNER_TLS_CA: join(dir, sub, 'ca.crt') });
  return { runner: files('runner'), client: files('client') };
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr}`);
}

/**
 * A network namespace joined to the host by a veth pair: `hostIp` on the host end, `nsIp` inside.
 * `cut()` sets the host end down (both ends lose carrier: nothing passes either way); `heal()` sets it up.
 */
export class Netns {
  readonly hostIf: string;
  readonly nsIf: string;
  private made = false;

  constructor(
    readonly name: string,
    readonly hostIp: string,
    readonly nsIp: string,
  ) {
    const tag = name.replace(/[^a-z0-9]/gi, '').slice(-9);
    this.hostIf = `v${tag}h`;
    this.nsIf = `v${tag}n`;
  }

  create(): void {
    // Another interface with this subnet (a run killed mid-way) would take the route: refuse clearly.
    const taken = spawnSync('ip', ['-o', 'addr', 'show', 'to', `${this.hostIp}/30`], { encoding: 'utf8' }).stdout?.trim();
    if (taken) throw new Error(`${this.hostIp}/30 is already on an interface (${taken.split(/\s+/)[1]}): remove it (ip link del <it>) and run again`);
    ip('netns', 'add', this.name);
    this.made = true;
    ip('link', 'add', this.hostIf, 'type', 'veth', 'peer', 'name', this.nsIf);
    ip('link', 'set', this.nsIf, 'netns', this.name);
    ip('addr', 'add', `${this.hostIp}/30`, 'dev', this.hostIf);
    ip('link', 'set', this.hostIf, 'up');
    ip('netns', 'exec', this.name, 'ip', 'addr', 'add', `${this.nsIp}/30`, 'dev', this.nsIf);
    ip('netns', 'exec', this.name, 'ip', 'link', 'set', this.nsIf, 'up');
    ip('netns', 'exec', this.name, 'ip', 'link', 'set', 'lo', 'up');
  }

  cut(): void {
    ip('link', 'set', this.hostIf, 'down');
  }

  heal(): void {
    ip('link', 'set', this.hostIf, 'up');
  }

  /** Kills whatever still runs inside, then deletes the namespace (the veth pair goes with it). Never throws. */
  destroy(): void {
    if (!this.made) return;
    const pids = spawnSync('ip', ['netns', 'pids', this.name], { encoding: 'utf8' }).stdout?.split(/\s+/).filter(Boolean) ?? [];
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    spawnSync('ip', ['link', 'del', this.hostIf]);
    spawnSync('ip', ['netns', 'del', this.name]);
    this.made = false;
  }
}
