import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configSchema } from '@handplane/contracts';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { runnerConfigSchema } from '../../services/sandbox-runner/src/runner-config';
import { containers, type Manifest, type PlacedContainer } from './manifests';

/** The five services, their HTTP port variable and default port (libs/contracts config). */
export const SERVICES = {
  gateway: { portEnv: 'GATEWAY_PORT', port: 8080 },
  'agent-runtime': { portEnv: 'RUNTIME_PORT', port: 8081 },
  'task-coordinator': { portEnv: 'COORDINATOR_PORT', port: 8082 },
  'log-ingestor': { portEnv: 'INGESTOR_PORT', port: 8083 },
  'sandbox-runner': { portEnv: 'RUNNER_HTTP_PORT', port: 8084 },
} as const;
export type ServiceName = keyof typeof SERVICES;
export const CONTROL_PLANE = ['gateway', 'agent-runtime', 'task-coordinator', 'log-ingestor'] as const;
export const RUNNER_GRPC_PORT = 50051;

/** The runner's own id check (services/sandbox-runner/src/service.ts): a NATS subject token. */
export const RUNNER_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Variables deployment files may set that are not service settings, each with its reader. */
const DEPLOYMENT_ONLY = new Set([
  'NODE_NAME', // the runner's start script derives RUNNER_ID from it
  'POD_IP', // … and RUNNER_ADVERTISE_ADDRESS from it and RUNNER_DNS_DOMAIN
  'RUNNER_DNS_DOMAIN',
  'OTEL_EXPORTER_OTLP_ENDPOINT', // tracing (libs/platform telemetry/tracing.ts reads these)
  'OTEL_TRACES_EXPORTER',
  'OTEL_SERVICE_NAME',
  'METRICS_TOKEN', // the gateway's /metrics bearer (services/gateway/src/service.ts reads process.env)
]);

/** Environment names a service reads: a misspelt name would silently fall back to a default. */
export function unknownEnvNames(names: Iterable<string>): string[] {
  const known = new Set([...Object.keys(configSchema.shape), ...Object.keys(runnerConfigSchema.shape), ...DEPLOYMENT_ONLY]);
  return [...names].filter((n) => !known.has(n));
}

/** Pod-level settings a container inherits when it does not set its own. */
export function effectiveSecurity(p: PlacedContainer) {
  const c = p.container.securityContext ?? {};
  const pod = p.pod.securityContext ?? {};
  return {
    runAsUser: c.runAsUser ?? pod.runAsUser,
    runAsNonRoot: c.runAsNonRoot ?? pod.runAsNonRoot,
    privileged: c.privileged === true,
    allowPrivilegeEscalation: c.allowPrivilegeEscalation,
    readOnlyRootFilesystem: c.readOnlyRootFilesystem === true,
    drop: c.capabilities?.drop ?? [],
    add: c.capabilities?.add ?? [],
  };
}

/** Names of every Secret the workloads refer to (env, volumes, image pull secrets). */
export function referencedSecrets(ms: readonly Manifest[]): Set<string> {
  const out = new Set<string>();
  for (const p of containers(ms)) {
    for (const e of p.container.env ?? []) if (e.valueFrom?.secretKeyRef?.name) out.add(e.valueFrom.secretKeyRef.name);
    for (const v of p.pod.volumes ?? []) if (v.secret?.secretName) out.add(v.secret.secretName);
    for (const s of p.pod.imagePullSecrets ?? []) if (s.name) out.add(s.name);
  }
  return out;
}

/** The containerPort behind a named (or numbered) probe port. */
export function probePort(c: IContainer, port: string | number | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/**
 * Runs the runner container's start script with a stand-in `node` that prints the identity it
 * would start with. Answers RUNNER_ID and RUNNER_ADVERTISE_ADDRESS as the runner would see them.
 */
export function runStartScript(script: string, env: Record<string, string>): { runnerId: string; advertise: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hp-runner-start-'));
  try {
    const node = join(dir, 'node');
    writeFileSync(node, '#!/bin/sh\nprintf "%s\\n%s\\n" "$RUNNER_ID" "$RUNNER_ADVERTISE_ADDRESS"\n');
    chmodSync(node, 0o755);
    const r = spawnSync('/bin/sh', ['-c', script], { cwd: dir, encoding: 'utf8', env: { ...env, PATH: `${dir}:/usr/bin:/bin` } });
    if (r.status !== 0) throw new Error(`start script failed (${r.status}): ${r.stderr}`);
    const [runnerId = '', advertise = ''] = r.stdout.split('\n');
    return { runnerId, advertise };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
