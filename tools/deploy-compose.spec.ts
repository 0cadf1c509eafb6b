import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runtimeLibs, workspaces } from './deploy/dockerfile';
import { RUNNER_ID, SERVICES, unknownEnvNames, type ServiceName } from './deploy/expectations';
import { ROOT } from './deploy/helm';
import { mtlsHandshake } from './deploy/tls';

/**
 * docker-compose.yml, validated offline by Debian's docker-compose (1.29: `config` needs no
 * engine), and the development certificates of deploy/gen-certs.sh, checked by a real mTLS
 * handshake. No image is built: no Docker engine runs here.
 */
const NAMESPACES_OVERRIDE = 'deploy/compose/runner-namespaces.yml';

interface ComposeService {
  environment?: Record<string, string>;
  volumes?: (string | { source?: string; target: string; read_only?: boolean })[];
  build?: { target?: string; args?: Record<string, string> };
  privileged?: boolean;
  read_only?: boolean;
  cap_drop?: string[];
  healthcheck?: { test: string[] };
  command?: string[];
}

/** Runs docker-compose with a clean environment, so the file's own defaults apply. */
function compose(files: string[], args: string[]) {
  const r = spawnSync('docker-compose', [...files.flatMap((f) => ['-f', f]), ...args], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() } });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error('docker-compose is not installed: the compose file is validated with it offline (Debian: apt-get install docker-compose; `npm test` installs it through scripts/infra.mjs ensureComposeValidator)');
  }
  if (r.error) throw r.error;
  return r;
}

/** `docker-compose config`: validates the files and prints the merged, normalised result. */
function config(files: string[]): { status: number | null; stderr: string; services: Record<string, ComposeService> } {
  const r = compose(files, ['config']);
  return { status: r.status, stderr: r.stderr, services: r.status === 0 ? (parse(r.stdout) as { services: Record<string, ComposeService> }).services : {} };
}

const mounts = (s: ComposeService) => (s.volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source ?? ''}:${v.target}${v.read_only ? ':ro' : ''}`));

describe('docker-compose.yml', () => {
  let base: ReturnType<typeof config>;
  let withNamespaces: ReturnType<typeof config>;
  beforeAll(() => {
    base = config(['docker-compose.yml']);
    withNamespaces = config(['docker-compose.yml', NAMESPACES_OVERRIDE]);
  });

  it('validates with docker-compose config, alone and with the PID-namespace override', () => {
    expect({ status: base.status, stderr: base.stderr }).toEqual({ status: 0, stderr: '' });
    expect({ status: withNamespaces.status, stderr: withNamespaces.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('a broken compose file fails the validator', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hp-compose-'));
    try {
      const bad = join(dir, 'bad.yml');
      writeFileSync(bad, 'version: "3.8"\nservices:\n  x:\n    image: a\n    restrat: always\n');
      expect(compose([bad], ['config', '-q']).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs NATS with JetStream on a volume (fsync always), Postgres, the five services and a trace viewer', () => {
    const services = base.services;
    expect(Object.keys(services).sort()).toEqual([...Object.keys(SERVICES), 'jaeger', 'nats', 'postgres'].sort());
    expect(mounts(services.nats!)).toEqual(expect.arrayContaining([expect.stringMatching(/^nats-data:\/data(:rw)?$/), expect.stringMatching(/deploy\/nats\/nats\.conf:\/etc\/nats\/nats\.conf:ro$/)]));
    const conf = readFileSync(join(ROOT, 'deploy/nats/nats.conf'), 'utf8');
    expect(conf).toMatch(/jetstream\s*\{[^}]*store_dir:\s*\/data[^}]*sync_interval:\s*always/);
    expect(mounts(services.postgres!)).toContainEqual(expect.stringMatching(/^pg-data:\/var\/lib\/postgresql\/data(:rw)?$/));
  });

  it('hardens the five services and gives each only settings it reads', () => {
    const services = base.services;
    for (const s of Object.keys(SERVICES) as ServiceName[]) {
      const svc = services[s]!;
      expect({ s, read_only: svc.read_only, cap_drop: svc.cap_drop, privileged: svc.privileged }).toEqual({ s, read_only: true, cap_drop: ['ALL'], privileged: undefined });
      expect({ s, target: svc.build?.target, service: svc.build?.args?.SERVICE }).toEqual({ s, target: s === 'sandbox-runner' ? 'sandbox-runner' : 'service', service: s });
      expect({ s, unknown: unknownEnvNames(Object.keys(svc.environment ?? {})) }).toEqual({ s, unknown: [] });
      expect(svc.healthcheck?.test.join(' ')).toContain(`http://127.0.0.1:${SERVICES[s].port}/readyz`);
    }
    expect(services['sandbox-runner']!.environment!.DATABASE_URL).toBeUndefined();
    expect(services.gateway!.environment!.GATEWAY_PORT).toBe('8080');
  });

  it('serves the runner over mTLS at an address the others can reach, with a valid RUNNER_ID', () => {
    const services = base.services;
    const runner = services['sandbox-runner']!.environment!;
    expect(runner.RUNNER_ID).toMatch(RUNNER_ID);
    expect(runner).toMatchObject({ RUNNER_HOST: '0.0.0.0', RUNNER_ADVERTISE_ADDRESS: 'sandbox-runner:50051', RUNNER_TLS_CERT: '/etc/handplane/tls/tls.crt', RUNNER_TLS_KEY: '/etc/handplane/tls/tls.key', RUNNER_TLS_CA: '/etc/handplane/tls/ca.crt' });
    expect(mounts(services['sandbox-runner']!)).toContainEqual(expect.stringMatching(/deploy\/certs\/runner:\/etc\/handplane\/tls:ro$/));
    for (const s of ['task-coordinator', 'log-ingestor']) {
      expect(services[s]!.environment).toMatchObject({ RUNNER_TLS_CERT: '/etc/handplane/runner-tls/tls.crt', RUNNER_TLS_KEY: '/etc/handplane/runner-tls/tls.key', RUNNER_TLS_CA: '/etc/handplane/runner-tls/ca.crt' });
      expect(mounts(services[s]!)).toContainEqual(expect.stringMatching(/deploy\/certs\/client:\/etc\/handplane\/runner-tls:ro$/));
    }
    // The CA key signs certificates: no container mounts it.
    for (const svc of Object.values(services)) expect(mounts(svc).filter((m) => /deploy\/certs(\/ca)?:/.test(m))).toEqual([]);
    const withNs = withNamespaces.services['sandbox-runner']!;
    expect({ privileged: withNs.privileged, sandbox: withNs.environment!.RUNNER_SANDBOX }).toEqual({ privileged: true, sandbox: 'bwrap' });
  });
});

describe('deploy/docker/Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'deploy/docker/Dockerfile'), 'utf8');

  it('copies every workspace manifest before npm ci (npm ci fails on a missing workspace)', () => {
    const beforeCi = dockerfile.slice(0, dockerfile.search(/^RUN .*npm ci /m));
    expect(beforeCi.length).toBeGreaterThan(0);
    expect(workspaces().filter((w) => !beforeCi.includes(`COPY ${w}/package.json ${w}/`))).toEqual([]);
  });

  it('ships every lib each service imports at run time', () => {
    const shipped = /for lib in ([a-z -]+); do/.exec(dockerfile)?.[1]?.trim().split(/\s+/) ?? [];
    for (const s of Object.keys(SERVICES)) expect({ s, missing: runtimeLibs(s).filter((l) => !shipped.includes(l)) }).toEqual({ s, missing: [] });
  });

  it('has the two targets compose builds, each ending as a non-root user', () => {
    const stage = (name: string) => dockerfile.slice(dockerfile.indexOf(` AS ${name}\n`)).split(/\nFROM /)[0]!;
    expect(stage('sandbox-runner')).toMatch(/\nUSER 1000:1000\n/);
    expect(stage('service')).toMatch(/\nUSER 65532:65532\n/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });
});

describe('deploy/gen-certs.sh', () => {
  it('makes a CA, a server certificate for sandbox-runner and a client certificate that complete an mTLS handshake', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hp-certs-'));
    try {
      const r = spawnSync('sh', [join(ROOT, 'deploy/gen-certs.sh'), dir, 'DNS:runner.example.org'], { encoding: 'utf8' });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const pem = (d: string) => ({ cert: readFileSync(join(dir, d, 'tls.crt')), key: readFileSync(join(dir, d, 'tls.key')), ca: readFileSync(join(dir, d, 'ca.crt')) });
      const [server, client] = [pem('runner'), pem('client')];
      expect(await mtlsHandshake(server, client, 'sandbox-runner')).toBe('');
      expect(await mtlsHandshake(server, client, 'runner.example.org')).toBe('');
      expect(await mtlsHandshake(server, client, 'elsewhere.example.org')).toMatch(/altnames|does not match/i);
      expect(await mtlsHandshake(server, { ca: client.ca }, 'sandbox-runner')).not.toBe('');
      // A second run must not silently replace a CA the running services trust.
      expect(spawnSync('sh', [join(ROOT, 'deploy/gen-certs.sh'), dir], { encoding: 'utf8' }).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
