// Helpers shared by the up/test/infra scripts. Node builtins only: these run before `npm ci`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

export const root = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
export const log = (msg) => console.log(`[handplane] ${msg}`);

/** True when a TCP connection to host:port opens within `ms`. */
export function reachable(host, port, ms = 1000) {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(ms, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export async function waitReachable(host, port, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await reachable(host, port)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

export function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
}

/** Installs dependencies when node_modules is missing or older than the lock file. */
export function ensureDependencies() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log('installing dependencies (npm ci)');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

/** Starts a detached background process whose output goes to a log file. */
export function daemon(cmd, args, logFile, opts = {}) {
  mkdirSync(join(root, '.data'), { recursive: true });
  const out = spawnSync('sh', ['-c', `nohup "$0" "$@" >>"${logFile}" 2>&1 </dev/null & echo $!`, cmd, ...args], { encoding: 'utf8', cwd: root, ...opts });
  return out.stdout.trim();
}

export function postgresVersions() {
  const base = '/usr/lib/postgresql';
  return existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
}

export function parseUrl(url, defPort) {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || defPort) };
}

export { spawn };
