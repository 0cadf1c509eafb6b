import { parseMountinfo, parseProcCgroup } from './cgroup-detect';

describe('cgroup detection parsers', () => {
  it('reads a hybrid host (v1 controllers plus a v2 mount) from mountinfo and /proc/self/cgroup', () => {
    const mounts = parseMountinfo(
      [
        '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
        '38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
        '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
        '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
      ].join('\n'),
    );
    expect(mounts.filter((m) => m.fstype === 'cgroup').map((m) => [m.point, m.superOptions])).toEqual([
      ['/sys/fs/cgroup/memory', ['rw', 'memory']],
      ['/sys/fs/cgroup/pids', ['rw', 'pids']],
    ]);
    expect(mounts.find((m) => m.fstype === 'cgroup2')?.point).toBe('/sys/fs/cgroup/unified');
    const own = parseProcCgroup('8:pids:/\n4:memory:/process_api/29b1\n2:cpu,cpuacct:/x\n0::/\n');
    expect(Object.fromEntries(own)).toEqual({ pids: '/', memory: '/process_api/29b1', cpu: '/x', cpuacct: '/x', '': '/' });
  });

  it('reads a pure v2 host with optional fields and an escaped mount point', () => {
    const [m] = parseMountinfo('29 23 0:26 / /sys/fs/cgroup\\040x rw,nosuid shared:4 master:1 - cgroup2 cgroup2 rw,nsdelegate');
    expect(m).toEqual({ root: '/', point: '/sys/fs/cgroup x', fstype: 'cgroup2', superOptions: ['rw', 'nsdelegate'] });
    expect(parseProcCgroup('0::/kubepods/pod1/ctr\n').get('')).toBe('/kubepods/pod1/ctr');
  });
});
