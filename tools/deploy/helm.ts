import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseManifests, type Manifest } from './manifests';

export const ROOT = join(__dirname, '..', '..');
export const CHART = join(ROOT, 'helm', 'handplane');

export interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the helm binary shipped in an npm package (scripts/helm.mjs extracts it once); offline. */
export function helm(args: readonly string[]): Run {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'helm.mjs'), ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template` with these values (merged over values.yaml); answers the run and its documents. */
export function template(values: Record<string, unknown> = {}, release = 'hp', namespace = 'handplane'): Run & { manifests: Manifest[] } {
  const dir = mkdtempSync(join(tmpdir(), 'hp-helm-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    const r = helm(['template', release, CHART, '--namespace', namespace, '--values', file]);
    return { ...r, manifests: r.status === 0 ? parseManifests(r.stdout) : [] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Like template, but a failed render fails with helm's own message. */
export function render(values: Record<string, unknown> = {}, release = 'hp', namespace = 'handplane'): Manifest[] {
  const r = template(values, release, namespace);
  if (r.status !== 0) throw new Error(`helm template failed (${r.status}):\n${r.stderr}`);
  return r.manifests;
}
