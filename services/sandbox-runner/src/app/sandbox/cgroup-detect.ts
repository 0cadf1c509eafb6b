import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@handplane/platform';
import type { CgroupDir, CgroupSupport } from './cgroups';

type Controller = 'pids' | 'memory';
const WANTED: readonly Controller[] = ['pids', 'memory'];

interface Mount {
  readonly root: string;
  readonly point: string;
  readonly fstype: string;
  readonly superOptions: readonly string[];
}

/** /proc/self/mountinfo: "id parent maj:min root point opts [optional…] - fstype source superopts". */
export function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const l = left.split(' ');
    const r = right.split(' ');
    out.push({ root: unescape(l[3]), point: unescape(l[4]), fstype: r[0], superOptions: (r[2] ?? '').split(',') });
  }
  return out;
}

const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** /proc/self/cgroup: "id:controllers:path" → path per v1 controller, and '' for v2. */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') out.set('', m[2]);
    for (const c of m[1].split(',')) if (c) out.set(c, m[2]);
  }
  return out;
}

/** Where a process in cgroup `path` of a hierarchy mounted as `mount` sees its directory. */
function dirOf(mount: Mount, path: string): string | null {
  if (mount.root === '/') return join(mount.point, path);
  if (path === mount.root || path.startsWith(`${mount.root}/`)) return join(mount.point, path.slice(mount.root.length));
  return null;
}

const write = (p: string, v: string) => writeFile(p, v).then(
  () => null,
  (e: NodeJS.ErrnoException) => e,
);

/**
 * Enables pids/memory for children of `base` (v2). The "no internal processes" rule refuses this
 * while `base` holds processes; a runner at the root of its own cgroup namespace (a container) then
 * moves those processes into a leaf first, as container inits do.
 */
async function enableV2(base: string, ownPath: string, want: Controller[], logger: Logger): Promise<Controller[]> {
  if (want.length === 0) return [];
  const line = want.map((c) => `+${c}`).join(' ');
  let err = await write(join(base, 'cgroup.subtree_control'), line);
  if (err?.code === 'EBUSY' && ownPath === '/') {
    const leaf = join(base, 'handplane-runner');
    await mkdir(leaf, { recursive: true });
    const procs = (await readFile(join(base, 'cgroup.procs'), 'utf8')).split('\n').filter(Boolean);
    for (const pid of procs) await write(join(leaf, 'cgroup.procs'), pid);
    logger.info({ moved: procs.length, leaf }, 'moved the container\'s processes into a leaf cgroup to enable pids/memory limits');
    err = await write(join(base, 'cgroup.subtree_control'), line);
  }
  if (err) {
    logger.warn({ err, base }, 'cgroup v2: cannot enable pids/memory for children; limits fall back to prlimit');
    return [];
  }
  return want;
}

async function detectV2(mounts: Mount[], own: Map<string, string>, key: string, logger: Logger): Promise<{ dir: CgroupDir; roles: Controller[] } | null> {
  const mount = mounts.find((m) => m.fstype === 'cgroup2');
  const ownPath = own.get('');
  if (!mount || ownPath === undefined) return null;
  const base = dirOf(mount, ownPath);
  if (!base) return null;
  const available = (await readFile(join(base, 'cgroup.controllers'), 'utf8').catch(() => '')).trim().split(/\s+/);
  const enabled = await enableV2(base, ownPath, WANTED.filter((c) => available.includes(c)), logger);
  const parent = join(base, `handplane-${key}`);
  if (await mkdir(parent, { recursive: true }).then(() => null, (e: Error) => e)) return null;
  const roles = enabled.length > 0 && !(await write(join(parent, 'cgroup.subtree_control'), enabled.map((c) => `+${c}`).join(' '))) ? enabled : [];
  return { dir: { path: parent, version: 2 }, roles };
}

async function detectV1(mounts: Mount[], own: Map<string, string>, key: string, controller: Controller): Promise<CgroupDir | null> {
  const mount = mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(controller));
  const ownPath = own.get(controller);
  if (!mount || ownPath === undefined) return null;
  const base = dirOf(mount, ownPath);
  if (!base) return null;
  const parent = join(base, `handplane-${key}`);
  if (await mkdir(parent, { recursive: true }).then(() => null, () => 'failed')) return null;
  return { path: parent, version: 1 };
}

/**
 * Finds the cgroup hierarchies this runner may use, v2 and/or v1 (hybrid hosts mount both: v2 then
 * only tracks and kills, v1 limits). `key` names this runner's parent directories (derived from its
 * data dir, so a restarted runner finds its commands' cgroups again). Never throws: a host without
 * writable cgroups gets an empty support and a warning.
 */
export async function detectCgroups(key: string, logger: Logger): Promise<CgroupSupport> {
  const none: CgroupSupport = { description: 'none', enforces: { pids: false, memory: false }, parents: [], roles: new Map() };
  const [mountinfo, cgroupFile] = await Promise.all([readFile('/proc/self/mountinfo', 'utf8').catch(() => ''), readFile('/proc/self/cgroup', 'utf8').catch(() => '')]);
  const mounts = parseMountinfo(mountinfo);
  const own = parseProcCgroup(cgroupFile);
  const parents: CgroupDir[] = [];
  const roles = new Map<string, Controller[]>();
  const v2 = await detectV2(mounts, own, key, logger).catch(() => null);
  if (v2) {
    parents.push(v2.dir);
    roles.set(v2.dir.path, v2.roles);
  }
  for (const c of WANTED) {
    if (v2?.roles.includes(c)) continue;
    const dir = await detectV1(mounts, own, key, c).catch(() => null);
    if (!dir) continue;
    parents.push(dir);
    roles.set(dir.path, [c]);
  }
  if (parents.length === 0) return none;
  const has = (c: Controller) => [...roles.values()].some((r) => r.includes(c));
  const description = parents.map((p) => `v${p.version}${roles.get(p.path)?.length ? `(${roles.get(p.path)?.join(',')})` : '(tracking)'}`).join(' + ');
  return { description, enforces: { pids: has('pids'), memory: has('memory') }, parents, roles };
}
