import { parseAllDocuments } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';

/** One rendered Kubernetes object (loosely typed: the schema check decides what is valid). */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly [field: string]: unknown;
}

interface Model {
  validate(): void;
}

/**
 * The kinds the chart may render, each with its kubernetes-models class (JSON schema validation)
 * and the module/interface the unknown-field check types it with.
 */
export const MODELS: Record<string, { apiVersion: string; module: string; iface: string; make: (o: object) => Model }> = {
  ConfigMap: { apiVersion: 'v1', module: 'kubernetes-models/v1/ConfigMap', iface: 'IConfigMap', make: (o) => new ConfigMap(o as never) },
  Secret: { apiVersion: 'v1', module: 'kubernetes-models/v1/Secret', iface: 'ISecret', make: (o) => new Secret(o as never) },
  Service: { apiVersion: 'v1', module: 'kubernetes-models/v1/Service', iface: 'IService', make: (o) => new Service(o as never) },
  Deployment: { apiVersion: 'apps/v1', module: 'kubernetes-models/apps/v1/Deployment', iface: 'IDeployment', make: (o) => new Deployment(o as never) },
  DaemonSet: { apiVersion: 'apps/v1', module: 'kubernetes-models/apps/v1/DaemonSet', iface: 'IDaemonSet', make: (o) => new DaemonSet(o as never) },
  StatefulSet: { apiVersion: 'apps/v1', module: 'kubernetes-models/apps/v1/StatefulSet', iface: 'IStatefulSet', make: (o) => new StatefulSet(o as never) },
  HorizontalPodAutoscaler: { apiVersion: 'autoscaling/v2', module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', iface: 'IHorizontalPodAutoscaler', make: (o) => new HorizontalPodAutoscaler(o as never) },
  NetworkPolicy: { apiVersion: 'networking.k8s.io/v1', module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy', iface: 'INetworkPolicy', make: (o) => new NetworkPolicy(o as never) },
  PodDisruptionBudget: { apiVersion: 'policy/v1', module: 'kubernetes-models/policy/v1/PodDisruptionBudget', iface: 'IPodDisruptionBudget', make: (o) => new PodDisruptionBudget(o as never) },
};

/** Parses `helm template` output. YAML 1.1, as Kubernetes reads it (0440 is octal, `on` is true). */
export function parseManifests(text: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML in the render: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as Manifest | null;
    if (value !== null) out.push(value);
  }
  return out;
}

/** Schema errors of one object ('' when valid): an unknown kind or apiVersion is an error too. */
export function schemaErrors(m: Manifest): string {
  const model = MODELS[m.kind];
  if (!model) return `${m.kind}/${m.metadata?.name}: kind not expected in this chart`;
  if (m.apiVersion !== model.apiVersion) return `${m.kind}/${m.metadata.name}: apiVersion ${m.apiVersion}, expected ${model.apiVersion}`;
  try {
    model.make(m).validate();
    return '';
  } catch (e) {
    return `${m.kind}/${m.metadata.name}: ${(e as Error).message}`;
  }
}

export const key = (m: Manifest): string => `${m.kind}/${m.metadata.name}`;

export function find(ms: readonly Manifest[], kind: string, name: string): Manifest {
  const m = ms.find((x) => x.kind === kind && x.metadata.name === name);
  if (!m) throw new Error(`${kind}/${name} is not in the render (have: ${ms.map(key).join(', ')})`);
  return m;
}

export const ofKind = (ms: readonly Manifest[], kind: string): Manifest[] => ms.filter((m) => m.kind === kind);

export const WORKLOADS = ['Deployment', 'DaemonSet', 'StatefulSet'];

/** The pod spec of a workload. */
export function podSpec(m: Manifest): IPodSpec {
  const spec = (m as unknown as { spec: { template: { spec: IPodSpec } } }).spec;
  return spec.template.spec;
}

export interface PlacedContainer {
  readonly workload: string;
  readonly init: boolean;
  readonly container: IContainer;
  readonly pod: IPodSpec;
}

/** Every container (init containers included) of every workload. */
export function containers(ms: readonly Manifest[]): PlacedContainer[] {
  return ms
    .filter((m) => WORKLOADS.includes(m.kind))
    .flatMap((m) => {
      const pod = podSpec(m);
      return [...(pod.initContainers ?? []).map((c) => ({ c, init: true })), ...pod.containers.map((c) => ({ c, init: false }))].map(({ c, init }) => ({ workload: key(m), init, container: c, pod }));
    });
}

/** A container's environment as name → literal value (or `<from Secret name:key>` / `<field path>`). */
export function envOf(c: IContainer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.valueFrom?.secretKeyRef) out[e.name] = `<from Secret ${e.valueFrom.secretKeyRef.name}:${e.valueFrom.secretKeyRef.key}>`;
    else if (e.valueFrom?.fieldRef) out[e.name] = `<field ${e.valueFrom.fieldRef.fieldPath}>`;
    else out[e.name] = e.value ?? '';
  }
  return out;
}
