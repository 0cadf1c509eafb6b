import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@handplane/platform';
import { killQuietly, sleep } from './proc';

/** One cgroup directory of a command: v2, or v1 for one controller. */
export interface CgroupDir {
  readonly path: string;
  readonly version: 1 | 2;
}

export interface CgroupLimits {
  /** 0 = no limit. */
  readonly pidsMax: number;
  /** 0 = no limit. */
  readonly memoryMaxBytes: number;
}

/** What this host offers, found once at start. */
export interface CgroupSupport {
  /** For the start log: which hierarchy does what. */
  readonly description: string;
  /** Which limits a command's cgroup can enforce (the rest falls back to prlimit). */
  readonly enforces: { readonly pids: boolean; readonly memory: boolean };
  /** Parent directories, one per hierarchy used; commands get `<parent>/<commandId>`. */
  readonly parents: readonly CgroupDir[];
  /** Which parent enforces what. */
  readonly roles: ReadonlyMap<string, readonly ('pids' | 'memory')[]>;
}

const tryWrite = (path: string, value: string) => writeFile(path, value).then(
  () => null,
  (e: NodeJS.ErrnoException) => e,
);
const exists = (p: string) => access(p).then(
  () => true,
  () => false,
);

/**
 * The cgroups of one command. Membership is inherited by every descendant whatever it does
 * (setsid, double fork), so this is the authoritative "what is left" list next to the namespace.
 */
export class CommandCgroup {
  constructor(readonly dirs: readonly CgroupDir[]) {}

  /** The files a process writes "0" into to join (the sandbox init does it before the command starts). */
  get procsFiles(): string[] {
    return this.dirs.map((d) => join(d.path, 'cgroup.procs'));
  }

  /** Every pid in any of the command's cgroups. */
  async members(): Promise<number[]> {
    const all = new Set<number>();
    for (const f of this.procsFiles) {
      const text = await readFile(f, 'utf8').catch(() => '');
      // A pid this process cannot see reads as 0: never a target.
      for (const n of text.split('\n')) if (Number(n) > 1) all.add(Number(n));
    }
    return [...all];
  }

  async signalAll(signal: NodeJS.Signals): Promise<void> {
    for (const pid of await this.members()) killQuietly(pid, signal);
  }

  /** SIGKILL to everything in the cgroups until they are empty (cgroup.kill where v2 has it). */
  async killAll(timeoutMs = 5000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      for (const d of this.dirs) if (d.version === 2) await tryWrite(join(d.path, 'cgroup.kill'), '1');
      const left = await this.members();
      if (left.length === 0) return true;
      for (const pid of left) killQuietly(pid, 'SIGKILL');
      if (Date.now() >= until) return false;
      await sleep(10);
    }
  }

  /** True when the kernel's OOM killer ended something in the command's memory cgroup. */
  async oomKilled(): Promise<boolean> {
    for (const d of this.dirs) {
      const file = d.version === 2 ? 'memory.events' : 'memory.oom_control';
      const text = await readFile(join(d.path, file), 'utf8').catch(() => '');
      const m = /^oom_kill (\d+)$/m.exec(text);
      if (m && Number(m[1]) > 0) return true;
    }
    return false;
  }

  /** Removes the (empty) directories; a few retries while the kernel finishes tearing exited tasks down. */
  async remove(logger: Logger): Promise<void> {
    for (const d of this.dirs) {
      for (let i = 0; ; i++) {
        const err = await rmdir(d.path).then(
          () => null,
          (e: NodeJS.ErrnoException) => e,
        );
        if (!err || err.code === 'ENOENT') break;
        if (i >= 20) {
          logger.warn({ err, cgroup: d.path }, 'could not remove a command cgroup');
          break;
        }
        await sleep(25);
      }
    }
  }
}

/** Creates the command's cgroups under the parents and writes its limits; a failed write is a warning, not an error. */
export async function createCommandCgroup(support: CgroupSupport, name: string, limits: CgroupLimits, logger: Logger): Promise<CommandCgroup> {
  const dirs: CgroupDir[] = [];
  for (const parent of support.parents) {
    const dir = { path: join(parent.path, name), version: parent.version };
    const made = await mkdir(dir.path).then(
      () => null,
      (e: NodeJS.ErrnoException) => (e.code === 'EEXIST' ? null : e),
    );
    if (made) {
      logger.warn({ err: made, cgroup: dir.path }, 'could not create a command cgroup: its limits are not enforced');
      continue;
    }
    for (const [file, value] of limitWrites(dir, support.roles.get(parent.path) ?? [], limits)) {
      if (!(await exists(join(dir.path, file)))) continue;
      const err = await tryWrite(join(dir.path, file), value);
      if (err) logger.warn({ err, cgroup: dir.path, file }, 'could not set a cgroup limit');
    }
    dirs.push(dir);
  }
  return new CommandCgroup(dirs);
}

function limitWrites(dir: CgroupDir, roles: readonly ('pids' | 'memory')[], l: CgroupLimits): [string, string][] {
  const out: [string, string][] = [];
  if (roles.includes('pids') && l.pidsMax > 0) out.push(['pids.max', String(l.pidsMax)]);
  if (roles.includes('memory') && l.memoryMaxBytes > 0) {
    const v = String(l.memoryMaxBytes);
    // Swap would let a hog dodge the limit; v1 needs the memory limit before the memory+swap one.
    if (dir.version === 2) out.push(['memory.max', v], ['memory.swap.max', '0']);
    else out.push(['memory.limit_in_bytes', v], ['memory.memsw.limit_in_bytes', v]);
  }
  return out;
}

/** Kills and removes command cgroups left under the parents that no known command owns (a spool deleted by hand, a crash mid-launch). */
export async function removeStrayCgroups(support: CgroupSupport, owned: ReadonlySet<string>, logger: Logger): Promise<void> {
  for (const parent of support.parents) {
    const names = await readdir(parent.path, { withFileTypes: true }).catch(() => []);
    for (const n of names) {
      if (!n.isDirectory() || owned.has(n.name)) continue;
      const cg = new CommandCgroup([{ path: join(parent.path, n.name), version: parent.version }]);
      if (!(await cg.killAll())) logger.warn({ cgroup: n.name }, 'stray cgroup still has processes');
      await cg.remove(logger);
    }
  }
}

/** Removes this runner's parent directories when no command cgroup is left in them (a detached runner leaves them to its successor). */
export async function removeCgroupParents(support: CgroupSupport): Promise<void> {
  await Promise.all(support.parents.map((p) => rmdir(p.path).catch(() => undefined)));
}
