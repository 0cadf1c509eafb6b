import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '@handplane/platform';
import { detectCgroups } from './cgroup-detect';
import type { CgroupLimits, CgroupSupport } from './cgroups';

/** How commands are contained: a PID namespace made by bubblewrap or unshare, or (fallback) a process group. */
export type SandboxKind = 'bwrap' | 'unshare' | 'none';
export type SandboxChoice = SandboxKind | 'auto';

export interface SandboxBinaries {
  readonly bash: string;
  readonly perl: string;
  readonly bwrap: string | null;
  readonly unshare: string | null;
  readonly prlimit: string | null;
}

/** What the runner found at start; fixed for its lifetime. */
export interface SandboxHost {
  readonly kind: SandboxKind;
  readonly bin: SandboxBinaries;
  readonly cgroups: CgroupSupport;
  readonly limits: CgroupLimits;
  /** Limits no cgroup enforces, applied with prlimit at launch (RLIMIT_AS, RLIMIT_NPROC). */
  readonly prlimit: { readonly asBytes: number; readonly nproc: number } | null;
}

const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** The environment of the launcher chain (the command's own environment travels on fd 3). */
export const LAUNCHER_ENV: Record<string, string> = { PATH: SYSTEM_PATH.join(':'), LANG: 'C' };

export function which(name: string, path = process.env.PATH ?? ''): string | null {
  for (const dir of [...path.split(':').filter(Boolean), ...SYSTEM_PATH]) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

const PID1_CHECK = 'exit($$ == 1 ? 0 : 3)';

function runs(file: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000, env: LAUNCHER_ENV }, (err) => resolve(!err));
  });
}

/** Argv that starts `argv` as pid 1 of a new PID namespace (no --die-with-parent: commands must outlive a runner restart). */
export function namespaceArgv(kind: SandboxKind, bin: SandboxBinaries, cwd: string, argv: readonly string[]): string[] {
  if (kind === 'bwrap' && bin.bwrap) return [bin.bwrap, '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--as-pid-1', '--chdir', cwd, '--', ...argv];
  if (kind === 'unshare' && bin.unshare) return [bin.unshare, '--pid', '--fork', '--kill-child', '--mount-proc', ...argv];
  return [...argv];
}

async function probe(kind: SandboxKind, bin: SandboxBinaries): Promise<boolean> {
  if (kind === 'none') return true;
  if ((kind === 'bwrap' && !bin.bwrap) || (kind === 'unshare' && !bin.unshare)) return false;
  const [file, ...args] = namespaceArgv(kind, bin, '/', [bin.perl, '-e', PID1_CHECK]);
  return runs(file, args);
}

export interface DetectOptions {
  readonly want: SandboxChoice;
  readonly cgroups: 'auto' | 'off';
  /** Names this runner's cgroup parents (derived from the data dir). */
  readonly key: string;
  readonly limits: CgroupLimits;
  readonly logger: Logger;
}

/**
 * Chooses the containment at start: bubblewrap, else unshare (both probed for real: the init must
 * come up as pid 1), else a process group with a loud warning; cgroups v2 and/or v1 where writable,
 * prlimit for the limits no cgroup enforces. Throws only when bash or perl is missing, or when an
 * explicitly requested sandbox does not work.
 */
export async function detectSandboxHost(o: DetectOptions): Promise<SandboxHost> {
  const bash = which('bash');
  const perl = which('perl');
  if (!bash || !perl) throw new Error(`the sandbox runner needs bash and perl on PATH (found bash: ${bash ?? 'no'}, perl: ${perl ?? 'no'})`);
  const bin: SandboxBinaries = { bash, perl, bwrap: which('bwrap'), unshare: which('unshare'), prlimit: which('prlimit') };
  const candidates: SandboxKind[] = o.want === 'auto' ? ['bwrap', 'unshare'] : [o.want];
  let kind: SandboxKind = 'none';
  for (const c of candidates) {
    if (await probe(c, bin)) {
      kind = c;
      break;
    }
    if (o.want !== 'auto') throw new Error(`RUNNER_SANDBOX=${o.want} does not work on this host (${c === 'bwrap' ? bin.bwrap : bin.unshare} could not start a PID namespace)`);
  }
  if (kind === 'none') o.logger.warn({ bwrap: bin.bwrap, unshare: bin.unshare }, 'no PID namespace available: commands are contained by a process group (and cgroups if any); setsid and double forks can escape the group');
  const cgroups: CgroupSupport = o.cgroups === 'off' ? { description: 'off', enforces: { pids: false, memory: false }, parents: [], roles: new Map() } : await detectCgroups(o.key, o.logger);
  const asBytes = cgroups.enforces.memory ? 0 : o.limits.memoryMaxBytes;
  const nproc = cgroups.enforces.pids ? 0 : o.limits.pidsMax;
  const wantsPrlimit = asBytes > 0 || nproc > 0;
  if (wantsPrlimit && !bin.prlimit) o.logger.warn({ cgroups: cgroups.description }, 'neither cgroups nor prlimit can enforce the process/memory limits: commands run without them');
  if (wantsPrlimit && bin.prlimit) o.logger.warn({ cgroups: cgroups.description, asBytes, nproc }, 'limits not enforced by cgroups fall back to prlimit (RLIMIT_AS, RLIMIT_NPROC; root ignores RLIMIT_NPROC)');
  const host: SandboxHost = { kind, bin, cgroups, limits: o.limits, prlimit: wantsPrlimit && bin.prlimit ? { asBytes, nproc } : null };
  o.logger.info({ sandbox: kind, cgroups: cgroups.description, prlimit: host.prlimit }, 'sandbox containment chosen');
  return host;
}
