#!/usr/bin/env node
// Makes sure NATS (with JetStream) and Postgres are reachable: uses running ones, else starts the
// local binaries with data under .data/, else installs them from the OS's packages when it can,
// else says exactly what to install. Exits non-zero when it cannot.
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { daemon, log, parseUrl, postgresVersions, reachable, root, run, waitReachable, which } from './lib.mjs';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/handplane';
const isRoot = process.getuid?.() === 0;

function aptInstall(pkgs) {
  if (!isRoot || !which('apt-get')) return false;
  log(`installing ${pkgs.join(' ')} from the OS's packages`);
  try {
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', ...pkgs], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return true;
  } catch (e) {
    log(`apt-get failed: ${e.message}`);
    return false;
  }
}

async function ensureNats() {
  const { host, port } = parseUrl(NATS_URL.split(',')[0], 4222);
  if (await reachable(host, port)) return log(`NATS reachable at ${host}:${port}`);
  let bin = which('nats-server') ?? (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : null);
  if (!bin && aptInstall(['nats-server'])) bin = which('nats-server') ?? '/usr/sbin/nats-server';
  if (!bin) {
    console.error('NATS is not reachable and nats-server is not installed. Install it (Debian: apt-get install nats-server) or set NATS_URL.');
    process.exit(1);
  }
  const dir = join(root, '.data', 'nats');
  mkdirSync(dir, { recursive: true });
  log(`starting ${bin} with JetStream (data in .data/nats)`);
  daemon(bin, ['-a', host, '-p', String(port), '-js', '-sd', dir], join(root, '.data', 'nats.log'));
  if (!(await waitReachable(host, port, 20))) {
    console.error('nats-server did not come up; see .data/nats.log');
    process.exit(1);
  }
}

async function startSystemCluster() {
  if (!which('pg_ctlcluster') || !existsSync('/etc/postgresql')) return false;
  for (const v of readdirSync('/etc/postgresql')) {
    try {
      log(`starting the system PostgreSQL ${v} cluster`);
      run('pg_ctlcluster', ['--skip-systemctl-redirect', v, 'main', 'start']);
      return true;
    } catch {
      /* try the next one */
    }
  }
  return false;
}

function startLocalCluster(host, port) {
  const v = postgresVersions()[0];
  if (!v) return false;
  const bin = `/usr/lib/postgresql/${v}/bin`;
  const dir = join(root, '.data', 'pg');
  const asPg = isRoot ? ['runuser', '-u', 'postgres', '--'] : [];
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    mkdirSync(dir, { recursive: true });
    if (isRoot) run('chown', ['-R', 'postgres:postgres', join(root, '.data', 'pg')]);
    log(`initialising a local PostgreSQL ${v} cluster in .data/pg`);
    run(asPg[0] ?? `${bin}/initdb`, [...asPg.slice(1), ...(isRoot ? [`${bin}/initdb`] : []), '-D', dir, '--auth=trust', '-U', 'postgres']);
  }
  log('starting the local PostgreSQL cluster');
  run(asPg[0] ?? `${bin}/pg_ctl`, [...asPg.slice(1), ...(isRoot ? [`${bin}/pg_ctl`] : []), '-D', dir, '-l', join(dir, 'server.log'), '-o', `-p ${port} -k /tmp -c listen_addresses=${host}`, 'start']);
  return true;
}

async function ensurePostgres() {
  const { host, port } = parseUrl(DATABASE_URL, 5432);
  if (await reachable(host, port)) return log(`Postgres reachable at ${host}:${port}`);
  let started = (await startSystemCluster()) && (await waitReachable(host, port, 20));
  if (!started && postgresVersions().length === 0 && !which('pg_ctlcluster')) {
    if (aptInstall(['postgresql'])) started = (await startSystemCluster()) && (await waitReachable(host, port, 30));
  }
  if (!started) started = startLocalCluster(host, port) && (await waitReachable(host, port, 30));
  if (!started) {
    console.error('Postgres is not reachable and could not be started. Install it (Debian: apt-get install postgresql) or set DATABASE_URL.');
    process.exit(1);
  }
  log(`Postgres reachable at ${host}:${port}`);
}

/** The browser tests drive Debian's Chromium with playwright-core (no browser download). */
export function ensureChromium() {
  const bin = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (existsSync(bin)) return log(`Chromium at ${bin}`);
  if (!aptInstall(['chromium'])) {
    console.error(`Chromium is missing at ${bin}; the browser tests need it (Debian: apt-get install chromium, or set CHROMIUM_PATH).`);
    process.exit(1);
  }
}

/** tools/deploy-compose.spec.ts validates docker-compose.yml offline with Debian's docker-compose 1.29. */
export function ensureComposeValidator() {
  const bin = which('docker-compose');
  if (bin) return log(`docker-compose at ${bin}`);
  // No exit: only the compose test needs it, and it fails with this same advice.
  if (!aptInstall(['docker-compose'])) console.error('docker-compose is missing; the compose validation test will fail (Debian: apt-get install docker-compose).');
}

// The sandbox runner contains commands in a PID namespace made by bubblewrap, else by unshare
// (util-linux); its tests run with each one present. Best effort: never fails the infra.
function ensureSandboxTools() {
  if (which('bwrap')) return;
  if (aptInstall(['bubblewrap'])) log('bubblewrap installed (the runner tests also cover it)');
  else log('bubblewrap not installed: the sandbox runner uses unshare (util-linux) instead');
}

export async function ensureInfra() {
  await ensureNats();
  await ensurePostgres();
  ensureSandboxTools();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensureInfra().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
