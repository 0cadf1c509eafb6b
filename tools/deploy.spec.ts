import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { CONTROL_PLANE, RUNNER_GRPC_PORT, RUNNER_ID, SERVICES, effectiveSecurity, probePort, referencedSecrets, runStartScript, unknownEnvNames, type ServiceName } from './deploy/expectations';
import { CHART, helm, render, template } from './deploy/helm';
import { containers, envOf, find, key, ofKind, podSpec, schemaErrors, type Manifest } from './deploy/manifests';
import { mtlsHandshake } from './deploy/tls';
import { unknownFieldErrors } from './deploy/unknown-fields';

/**
 * helm/handplane, validated offline: helm (from an npm package) lints and renders it; every
 * rendered object is checked against the Kubernetes schemas (kubernetes-models) and for fields
 * the API does not know; then what the deployment promises is asserted on the objects.
 */
const EXTERNAL = { nats: { mode: 'external', external: { existingSecret: 'my-nats' } }, postgres: { mode: 'external', external: { existingSecret: 'my-db' } } };
const CLUSTERED = { nats: { streamReplicas: 3, bundled: { replicas: 3 } } };
const EXISTING_TLS = { runnerTls: { mode: 'existing', serverSecret: 'runner-server', clientSecret: 'runner-client' } };
const SCENARIOS: Record<string, Record<string, unknown>> = {
  default: {},
  external: EXTERNAL,
  clustered: CLUSTERED,
  restricted: { runner: { containment: 'restricted' }, networkPolicy: { runnerEgress: { enabled: false } } },
  fixedReplicas: { serviceDefaults: { autoscaling: { enabled: false }, pdb: null }, jwt: { existingSecret: 'my-jwt', jwksUrl: 'https://idp.example/jwks.json' }, admin: { existingSecret: 'my-admin' }, metrics: { existingSecret: 'my-metrics' } },
  existingTls: { ...EXISTING_TLS, postgres: { mode: 'external', external: { url: 'postgres://u:p@db.example:5432/handplane' } } },
};
const renders: Record<string, Manifest[]> = {};
const name = (c: string) => `hp-${c}`;
const workload = (ms: Manifest[], s: ServiceName) => (s === 'sandbox-runner' ? find(ms, 'DaemonSet', name(s)) : find(ms, 'Deployment', name(s)));
const mainContainer = (ms: Manifest[], s: ServiceName) => podSpec(workload(ms, s)).containers[0]!;
const counts = (ms: Manifest[]) => ms.reduce<Record<string, number>>((a, m) => ({ ...a, [m.kind]: (a[m.kind] ?? 0) + 1 }), {});

beforeAll(() => {
  for (const [scenario, values] of Object.entries(SCENARIOS)) renders[scenario] = render(values);
});

describe('helm chart helm/handplane', () => {
  it('passes helm lint --strict', () => {
    const r = helm(['lint', '--strict', CHART]);
    expect(r.stderr + r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(r.status).toBe(0);
  });

  it('renders only objects that validate against the Kubernetes schemas, with no unknown fields', () => {
    const all = Object.values(renders).flat();
    expect(all.length).toBeGreaterThan(100);
    expect(all.map(schemaErrors).filter(Boolean)).toEqual([]);
    expect(unknownFieldErrors(all)).toEqual([]);
  });

  it('the unknown-field check can fail', () => {
    const dep = structuredClone(find(renders.default!, 'Deployment', name('gateway'))) as Manifest & { spec: { template: { spec: Record<string, unknown> } } };
    dep.spec.template.spec.nodeSelecter = { a: 'b' };
    expect(unknownFieldErrors([dep]).join('\n')).toMatch(/Deployment\/hp-gateway: .*nodeSelecter/);
  });

  it('by default: four Deployments with HPAs and PDBs, the runner DaemonSet, bundled NATS and Postgres, NetworkPolicies', () => {
    expect(counts(renders.default!)).toEqual({ Deployment: 4, DaemonSet: 1, StatefulSet: 2, HorizontalPodAutoscaler: 4, PodDisruptionBudget: 4, NetworkPolicy: 5, Secret: 4, Service: 5, ConfigMap: 1 });
    for (const s of CONTROL_PLANE) {
      const hpa = find(renders.default!, 'HorizontalPodAutoscaler', name(s)) as unknown as { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number } };
      expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: name(s) });
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      // Replicas belong to the HPA: a Deployment that sets them would be reset on every upgrade.
      expect((find(renders.default!, 'Deployment', name(s)) as unknown as { spec: { replicas?: number } }).spec.replicas).toBeUndefined();
      const pdb = find(renders.default!, 'PodDisruptionBudget', name(s)) as unknown as { spec: { selector: { matchLabels: object } } };
      expect(pdb.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': s, 'app.kubernetes.io/instance': 'hp' });
    }
  });

  it('runs the runner as a DaemonSet only on labelled sandbox nodes', () => {
    const pod = podSpec(find(renders.default!, 'DaemonSet', name('sandbox-runner')));
    expect(pod.nodeSelector).toEqual({ 'handplane.dev/sandbox': 'true' });
    expect(pod.tolerations).toContainEqual(expect.objectContaining({ key: 'handplane.dev/sandbox', effect: 'NoSchedule' }));
    expect(pod.volumes).toContainEqual({ name: 'spool', hostPath: { path: '/var/lib/handplane/runner', type: 'DirectoryOrCreate' } });
  });

  it('runs nothing as root but the spool-owner init container, which can only change ownership', () => {
    for (const [scenario, ms] of Object.entries(renders)) {
      for (const p of containers(ms)) {
        const s = effectiveSecurity(p);
        const where = `${scenario} ${p.workload} ${p.container.name}`;
        if (p.init && p.container.name === 'spool-owner') {
          expect({ where, ...s }).toMatchObject({ runAsUser: 0, allowPrivilegeEscalation: false, privileged: false, readOnlyRootFilesystem: true, drop: ['ALL'], add: ['CHOWN', 'FOWNER'] });
          expect(p.container.command?.join(' ')).toMatch(/^\/bin\/sh -c chown 1000:1000 \S+ && chmod 0700 \S+$/);
          continue;
        }
        expect({ where, runAsNonRoot: s.runAsNonRoot, rootUid: s.runAsUser === 0 || s.runAsUser === undefined, readOnlyRoot: s.readOnlyRootFilesystem }).toEqual({ where, runAsNonRoot: true, rootUid: false, readOnlyRoot: true });
        if (s.privileged) {
          // The documented exception: bubblewrap needs a privileged container for a fresh /proc.
          expect({ where, container: p.container.name, uid: s.runAsUser }).toEqual({ where, container: scenario === 'restricted' ? 'never' : 'sandbox-runner', uid: 1000 });
        } else {
          expect({ where, escalation: s.allowPrivilegeEscalation, drop: s.drop, add: s.add }).toEqual({ where, escalation: false, drop: ['ALL'], add: [] });
        }
      }
    }
  });

  it('gives every container liveness and readiness probes and resources; services probe /healthz and /readyz on their port', () => {
    for (const p of containers(renders.clustered!)) {
      const r = p.container.resources;
      expect({ c: p.workload, cpu: !!r?.requests?.cpu, memory: !!r?.requests?.memory, limit: !!r?.limits?.memory }).toEqual({ c: p.workload, cpu: true, memory: true, limit: true });
      if (!p.init) expect({ c: p.workload, live: !!p.container.livenessProbe, ready: !!p.container.readinessProbe }).toEqual({ c: p.workload, live: true, ready: true });
    }
    for (const [s, { portEnv, port }] of Object.entries(SERVICES) as [ServiceName, (typeof SERVICES)[ServiceName]][]) {
      const c = mainContainer(renders.default!, s);
      expect(probePort(c, c.livenessProbe?.httpGet?.port)).toBe(port);
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(probePort(c, c.readinessProbe?.httpGet?.port)).toBe(port);
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(envOf(c)[portEnv]).toBe(String(port));
    }
    expect(envOf(mainContainer(renders.default!, 'sandbox-runner')).RUNNER_PORT).toBe(String(RUNNER_GRPC_PORT));
  });

  it('sets only environment variables the services read', () => {
    for (const [scenario, ms] of Object.entries(renders)) {
      const names = (Object.keys(SERVICES) as ServiceName[]).flatMap((s) => Object.keys(envOf(mainContainer(ms, s))));
      expect({ scenario, unknown: unknownEnvNames(names) }).toEqual({ scenario, unknown: [] });
    }
  });

  it('refers only to Secrets it renders or that the values name', () => {
    const given: Record<string, string[]> = { external: ['my-nats', 'my-db'], fixedReplicas: ['my-jwt', 'my-admin', 'my-metrics'], existingTls: ['runner-server', 'runner-client'] };
    for (const [scenario, ms] of Object.entries(renders)) {
      const rendered = ofKind(ms, 'Secret').map((m) => m.metadata.name);
      const missing = [...referencedSecrets(ms)].filter((n) => !rendered.includes(n) && !(given[scenario] ?? []).includes(n));
      expect({ scenario, missing }).toEqual({ scenario, missing: [] });
    }
    expect(envOf(mainContainer(renders.default!, 'gateway')).JWT_SECRET).toBe('<from Secret hp-jwt:JWT_SECRET>');
    expect(envOf(mainContainer(renders.default!, 'sandbox-runner')).DATABASE_URL).toBeUndefined();
  });

  it('gives the operator token to the gateway and the task-coordinator only (they sign and verify rebuilds), and only when a Secret is named', () => {
    for (const s of Object.keys(SERVICES) as ServiceName[]) {
      const expected = s === 'gateway' || s === 'task-coordinator' ? '<from Secret my-admin:ADMIN_TOKEN>' : undefined;
      expect({ s, token: envOf(mainContainer(renders.fixedReplicas!, s)).ADMIN_TOKEN }).toEqual({ s, token: expected });
      expect({ s, token: envOf(mainContainer(renders.default!, s)).ADMIN_TOKEN }).toEqual({ s, token: undefined });
      // The metrics bearer: the gateway's /metrics only (the others serve theirs on internal ports).
      expect({ s, metrics: envOf(mainContainer(renders.fixedReplicas!, s)).METRICS_TOKEN }).toEqual({ s, metrics: s === 'gateway' ? '<from Secret my-metrics:METRICS_TOKEN>' : undefined });
    }
  });

  it('admits only the intended traffic', () => {
    const np = (n: string) => find(renders.default!, 'NetworkPolicy', name(n)) as unknown as INetworkPolicy;
    const sources = (p: INetworkPolicy, port: string) =>
      (p.spec?.ingress ?? []).filter((r) => r.ports?.some((x) => x.port === port)).flatMap((r) => (r.from ?? [{ podSelector: { matchLabels: { anyone: 'yes' } } }]).map((f) => f.podSelector?.matchLabels?.['app.kubernetes.io/name'] ?? f.podSelector?.matchLabels?.anyone));
    expect(np('default-deny').spec).toEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'hp' } }, policyTypes: ['Ingress'] });
    expect(sources(np('gateway'), 'http')).toEqual(['yes']);
    expect(sources(np('sandbox-runner'), 'grpc').sort()).toEqual(['log-ingestor', 'task-coordinator']);
    expect(sources(np('nats'), 'client').sort()).toEqual(['agent-runtime', 'gateway', 'log-ingestor', 'sandbox-runner', 'task-coordinator']);
    expect(sources(np('postgres'), 'postgres').sort()).toEqual(['agent-runtime', 'gateway', 'log-ingestor', 'task-coordinator']);
    expect(JSON.stringify(np('sandbox-runner').spec?.egress)).toContain('169.254.169.254/32');
  });

  it('derives a valid RUNNER_ID from the node name and advertises a name its generated certificate covers', async () => {
    const ms = renders.default!;
    const c = mainContainer(ms, 'sandbox-runner');
    const env = envOf(c);
    const id = runStartScript(c.args![0]!, { NODE_NAME: 'ip-10-0-1-5.eu-west-1.compute.internal', POD_IP: '10.42.3.7', RUNNER_DNS_DOMAIN: env.RUNNER_DNS_DOMAIN!, RUNNER_PORT: env.RUNNER_PORT! });
    expect(id.runnerId).toBe('ip-10-0-1-5_eu-west-1_compute_internal');
    expect(id.runnerId).toMatch(RUNNER_ID);
    expect(id.advertise).toBe('10-42-3-7.hp-sandbox-runner.handplane.svc.cluster.local:50051');
    expect(env).toMatchObject({ RUNNER_HOST: '0.0.0.0', RUNNER_TLS_CERT: '/etc/handplane/tls/tls.crt', RUNNER_SANDBOX: 'bwrap', RUNNER_ON_SHUTDOWN: 'stop' });
    const pem = (n: string) => {
      const data = (find(ms, 'Secret', n) as unknown as { data: Record<string, string> }).data;
      return { cert: Buffer.from(data['tls.crt']!, 'base64'), key: Buffer.from(data['tls.key']!, 'base64'), ca: Buffer.from(data['ca.crt']!, 'base64') };
    };
    const [server, client] = [pem(name('runner-tls-server')), pem(name('runner-tls-client'))];
    const host = id.advertise.replace(/:\d+$/, '');
    expect(await mtlsHandshake(server, client, host)).toBe('');
    expect(await mtlsHandshake(server, client, 'hp-sandbox-runner.other.svc.cluster.local')).toMatch(/altnames|does not match/i);
    expect(await mtlsHandshake(server, { ca: client.ca }, host)).not.toBe('');
    for (const s of ['task-coordinator', 'log-ingestor'] as const) {
      expect(envOf(mainContainer(ms, s))).toMatchObject({ RUNNER_TLS_CERT: '/etc/handplane/runner-tls/tls.crt', RUNNER_TLS_KEY: '/etc/handplane/runner-tls/tls.key', RUNNER_TLS_CA: '/etc/handplane/runner-tls/ca.crt' });
      expect(podSpec(workload(ms, s)).volumes).toContainEqual({ name: 'runner-tls', secret: { secretName: name('runner-tls-client'), defaultMode: 0o440 } });
    }
  });

  it('uses external NATS and Postgres from Secrets, with nothing bundled', () => {
    const ms = renders.external!;
    expect(ofKind(ms, 'StatefulSet')).toEqual([]);
    expect(ofKind(ms, 'NetworkPolicy').map(key).sort()).toEqual(['NetworkPolicy/hp-default-deny', 'NetworkPolicy/hp-gateway', 'NetworkPolicy/hp-sandbox-runner']);
    for (const s of Object.keys(SERVICES) as ServiceName[]) expect(envOf(mainContainer(ms, s)).NATS_URL).toBe('<from Secret my-nats:NATS_URL>');
    for (const s of CONTROL_PLANE) expect(envOf(mainContainer(ms, s)).DATABASE_URL).toBe('<from Secret my-db:DATABASE_URL>');
  });

  it('clusters JetStream: three NATS servers with routes, a PDB, and STREAM_REPLICAS=3 everywhere', () => {
    const ms = renders.clustered!;
    expect((find(ms, 'StatefulSet', name('nats')) as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3);
    const conf = (find(ms, 'ConfigMap', name('nats')) as unknown as { data: Record<string, string> }).data['nats.conf']!;
    expect(conf).toMatch(/sync_interval: always/);
    for (const i of [0, 1, 2]) expect(conf).toContain(`nats://hp-nats-${i}.hp-nats-headless.handplane.svc.cluster.local:6222`);
    find(ms, 'PodDisruptionBudget', name('nats'));
    for (const s of Object.keys(SERVICES) as ServiceName[]) expect(envOf(mainContainer(ms, s)).STREAM_REPLICAS).toBe('3');
    expect((find(renders.default!, 'ConfigMap', name('nats')) as unknown as { data: Record<string, string> }).data['nats.conf']).not.toMatch(/cluster \{/);
  });

  it('restricted containment drops every privilege and runs commands in process groups', () => {
    const c = mainContainer(renders.restricted!, 'sandbox-runner');
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    expect(c.securityContext?.privileged).toBeUndefined();
    expect(envOf(c).RUNNER_SANDBOX).toBe('none');
  });

  it('honours fixed replicas, given JWT and TLS Secrets, and an external database URL', () => {
    const fixed = renders.fixedReplicas!;
    expect(ofKind(fixed, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(ofKind(fixed, 'PodDisruptionBudget')).toEqual([]);
    expect((find(fixed, 'Deployment', name('gateway')) as unknown as { spec: { replicas: number } }).spec.replicas).toBe(2);
    expect(envOf(mainContainer(fixed, 'gateway'))).toMatchObject({ JWT_SECRET: '<from Secret my-jwt:JWT_SECRET>', JWKS_URL: 'https://idp.example/jwks.json' });
    const tls = renders.existingTls!;
    expect(ofKind(tls, 'Secret').map(key)).toEqual(['Secret/hp-jwt', 'Secret/hp-postgres-external']);
    expect(podSpec(workload(tls, 'sandbox-runner')).volumes).toContainEqual({ name: 'tls', secret: { secretName: 'runner-server', defaultMode: 0o440 } });
    expect(envOf(mainContainer(tls, 'gateway')).DATABASE_URL).toBe('<from Secret hp-postgres-external:DATABASE_URL>');
  });

  it('refuses values that cannot work, with a reason', () => {
    const refuse = (values: Record<string, unknown>) => {
      const r = template(values);
      expect(r.status).not.toBe(0);
      return r.stderr;
    };
    expect(refuse({ nats: { streamReplicas: 3 } })).toContain('nats.streamReplicas=3 needs at least that many JetStream servers');
    expect(refuse({ nats: { mode: 'external' } })).toContain('nats.mode=external needs nats.external.url');
    expect(refuse({ postgres: { mode: 'external' } })).toContain('postgres.mode=external needs');
    expect(refuse({ runnerTls: { mode: 'existing' } })).toContain('runnerTls.mode=existing needs');
    expect(refuse({ runner: { containment: 'privledged' } })).toMatch(/containment.*must be one of/);
    expect(refuse({ runner: { nodeSelector: null } })).toMatch(/nodeSelector/);
  });
});
