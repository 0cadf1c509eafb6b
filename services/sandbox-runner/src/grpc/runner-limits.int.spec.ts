import { SignalKind } from '@handplane/proto';
import { testNats } from '@handplane/testing';
import { exec, execRequest, metaOf, scanProcesses, signal, startTestRunner, status, tempDataDir, waitExit, waitFor, type TestNats } from '../runner.spec-helper';

const PIDS_MAX = 40;
const MEMORY_MAX = 64 * 1024 * 1024;

/**
 * Issue point 1, limits: processes and memory per command (cgroups v2 or v1, whichever the host
 * has). Where no cgroup can enforce a limit the test is skipped with the reason logged (prlimit's
 * RLIMIT_NPROC does not bind root, and RLIMIT_AS is not a memory limit).
 */
describe('sandbox-runner limits (real cgroups where the host allows)', () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let t: Awaited<ReturnType<typeof startTestRunner>>;
  let enforces = { pids: false, memory: false };

  beforeAll(async () => {
    env = await testNats('runlim');
    data = await tempDataDir();
    const limits = { RUNNER_PIDS_MAX: String(PIDS_MAX), RUNNER_MEMORY_MAX_BYTES: String(MEMORY_MAX) };
    t = await startTestRunner(env, data.dir, limits);
    enforces = t.runner.containment.enforces;
  });
  afterAll(async () => {
    await t?.stop();
    await env?.close();
    await data?.remove();
  });

  const skip = (what: string) => process.stderr.write(`sandbox-runner limits: ${what} skipped: no writable cgroup enforces it on this host\n`);

  it(`caps a fork bomb at ${PIDS_MAX} processes, and the stop leaves nothing`, async () => {
    if (!enforces.pids) return skip('pids');
    const req = execRequest('echo go; bomb() { bomb | bomb & }; bomb 2>/dev/null; sleep 60', { env: { HP_MARK: 'bomb' } });
    await exec(t.client, req);
    await waitFor(async () => (await status(t.client, req.commandId)).outputBytes > 0, 10_000, 'bomb started');
    const ns = (await metaOf(data.dir, req.commandId)).sandbox?.nsInode;
    let peak = 0;
    for (let i = 0; i < 20; i++) {
      const procs = await scanProcesses();
      peak = Math.max(peak, procs.filter((p) => (ns ? p.ns === ns : p.environ.includes('HP_MARK=bomb'))).length);
      await new Promise((r) => setTimeout(r, 50));
    }
    // It did try hard (more than a handful), and never got past the limit.
    expect(peak).toBeGreaterThan(PIDS_MAX / 2);
    expect(peak).toBeLessThanOrEqual(PIDS_MAX);
    await signal(t.client, { commandId: req.commandId, kind: SignalKind.SIGNAL_KIND_STOP, graceMs: 200 });
    expect((await waitExit(t.client, req.commandId)).exit.reason).toBe('stopped');
    expect((await scanProcesses()).filter((p) => p.environ.includes('HP_MARK=bomb'))).toEqual([]);
  });

  it('kills a memory hog at its limit and says why', async () => {
    if (!enforces.memory) return skip('memory');
    const req = execRequest(`echo start; perl -e '$x = "a" x (512 * 1024 * 1024); print "survived\\n"'`);
    await exec(t.client, req);
    const { bytes, exit } = await waitExit(t.client, req.commandId);
    expect(bytes.toString()).toBe('start\n');
    expect(exit.reason).toMatch(/^memory_limit: /);
    expect(exit.exitCode === 0).toBe(false);
  });

  it('a command under its limits is not disturbed', async () => {
    const req = execRequest(`for i in $(seq 1 10); do sleep 0.01 & done; wait; perl -e '$x = "a" x (8 * 1024 * 1024); print length($x), "\\n"'`);
    await exec(t.client, req);
    const { bytes, exit } = await waitExit(t.client, req.commandId);
    expect(bytes.toString()).toBe(`${8 * 1024 * 1024}\n`);
    expect(exit).toMatchObject({ exitCode: 0, reason: '' });
  });
});
