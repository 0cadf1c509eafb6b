import { access } from 'node:fs/promises';
import { SignalKind } from '@handplane/proto';
import { testNats } from '@handplane/testing';
import { availableSandboxes, exec, execRequest, marked, metaOf, readLog, scanProcesses, signal, startTestRunner, status, tempDataDir, waitExit, waitFor, zombieChildren, type TestNats } from '../runner.spec-helper';

/**
 * Issue point 1: every way a shell command can leave processes behind, contained. `S` is a sleep
 * whose argv carries a token unique to the form; every process also inherits HP_MARK. After the
 * exit record, nothing with the token or the mark may exist, in any state, and no zombie is left
 * under the runner. Run for each PID-namespace sandbox this host has.
 */
const FORMS: readonly [string, string][] = [
  ['background &', 'S &'],
  ['nohup &', 'nohup S &'],
  ['nohup with redirects', 'nohup S >/dev/null 2>&1 &'],
  ['setsid &', 'setsid S &'],
  ['setsid -f', 'setsid -f S'],
  ['(cmd &)', '( S & )'],
  ['disown', 'S & disown'],
  ['disown -h', 'S & disown -h'],
  ['double fork', '( ( S & ) & )'],
  ['bash -c with &', "bash -c 'S &'"],
  ['sh -c with &', "sh -c 'S &'"],
  ['start-stop-daemon --background', 'start-stop-daemon --start --background --exec "$(command -v sleep)" -- ARG'],
  ['start-stop-daemon --make-pidfile', 'start-stop-daemon --start --background --make-pidfile --pidfile "ssd-ARG.pid" --exec "$(command -v sleep)" -- ARG'],
  ['node detached + unref', `"${process.execPath}" -e "require('child_process').spawn('sleep',['ARG'],{detached:true,stdio:'ignore'}).unref()"`],
  ['coproc', 'coproc S'],
  ['pipeline &', 'S | cat &'],
  ['{ cmd & }', '{ S & } 2>/dev/null'],
  ['closed fds &', 'S <&- >&- 2>&- &'],
  ['setsid bash -c', "setsid bash -c 'S & S' &"],
  ['nohup setsid', 'nohup setsid S >/dev/null 2>&1 &'],
  ['timeout &', 'timeout 600 S &'],
  ['perl double fork + setsid', `perl -MPOSIX -e 'fork and exit; POSIX::setsid(); fork and exit; exec "sleep", "ARG"'`],
  ['ignores TERM and HUP', `( trap '' TERM HUP INT; S ) &`],
  ['stopped (SIGSTOP) child', 'S & kill -STOP $!'],
  ['set -m job control', 'set -m; S & disown'],
  ['script (new pty session)', "script -qfc 'S' /dev/null >/dev/null 2>&1 &"],
  ['nested PID namespace', 'unshare --pid --fork S >/dev/null 2>&1 &'],
  ['background loop', 'while :; do S; done &'],
  ['xargs -P with setsid -f', "printf '1\\n2\\n' | xargs -P2 -I{} setsid -f sleep ARG"],
  ['env -i (no inherited mark)', 'env -i "$(command -v sleep)" ARG &'],
  ['exec -a renamed', '( exec -a hp-renamed sleep ARG ) &'],
  ['orphan via sh -c exit', "sh -c '(S &); exit 0' &"],
  ['daemon that ignores TERM', `nohup sh -c 'trap "" TERM HUP; while :; do S; done' >/dev/null 2>&1 &`],
];

// HP_TEST_NONE=1 adds the fallback without a namespace (a process group plus the cgroups, if any).
const KINDS = [...availableSandboxes(), ...(process.env.HP_TEST_NONE ? ['none'] : [])];
if (KINDS.length === 0) process.stderr.write('sandbox-runner containment tests skipped: neither bwrap nor unshare can make a PID namespace here\n');
const eachKind = KINDS.length > 0 ? describe.each<string>(KINDS) : describe.skip.each<string>(['none']);

eachKind('sandbox-runner containment with %s: no descendant outlives its command', (kind) => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let t: Awaited<ReturnType<typeof startTestRunner>>;
  const run = `${process.pid}${Date.now() % 100000}`;

  beforeAll(async () => {
    env = await testNats('runbox');
    data = await tempDataDir();
    t = await startTestRunner(env, data.dir, { RUNNER_SANDBOX: kind, ...(process.env.HP_TEST_NONE === 'nocgroups' ? { RUNNER_CGROUPS: 'off' } : {}) });
  });
  afterAll(async () => {
    await t?.stop();
    await env?.close();
    await data?.remove();
  });

  /** Runs every form at once; `stopped` keeps the main process alive until a STOP ends it. */
  async function runForms(mode: 'exits' | 'stopped') {
    const cases = FORMS.map(([name, form], i) => {
      const arg = `${mode === 'exits' ? 7 : 8}${run}${String(i).padStart(2, '0')}`;
      const snippet = form.replace(/\bS\b/g, `sleep ${arg}`).replace(/ARG/g, arg);
      const tail = mode === 'exits' ? 'sleep 0.3; echo launched' : `echo launched; sleep ${arg}`;
      const mark = `${run}-${mode}-${i}`;
      return { name, arg, mark, req: execRequest(`${snippet}\n${tail}`, { conversationId: `conv-box-${kind}`, env: { HP_MARK: mark } }) };
    });
    for (const c of cases) await exec(t.client, c.req);
    if (mode === 'stopped') {
      for (const c of cases) await waitFor(async () => (await status(t.client, c.req.commandId)).outputBytes > 0 && (await readLog(t.client, { commandId: c.req.commandId })).bytes.includes('launched'), 20_000, `${c.name} launched`);
      // The forms really left processes behind: the main sleep plus at least one detached one.
      const procs = await scanProcesses();
      const before = cases.map((c) => [c.name, marked(procs, c.mark, c.arg).length] as const);
      // (Without a namespace start-stop-daemon sees the host's other sleeps and declines to start one.)
      const mayNotStart = kind === 'none' ? ['nested PID namespace', 'start-stop-daemon --background'] : ['nested PID namespace'];
      expect(before.filter(([name, n]) => n < 2 && !mayNotStart.includes(name))).toEqual([]);
      // Every marked process is inside the command's namespace, whatever it did to leave its group
      // (the nested namespace is a child of it: other inode, same fate).
      for (const c of cases.filter((x) => x.name !== 'nested PID namespace' && kind !== 'none')) {
        const ns = (await metaOf(data.dir, c.req.commandId)).sandbox?.nsInode;
        expect(marked(procs, c.mark, c.arg).filter((p) => procs.find((q) => q.pid === p.pid)?.ns !== ns)).toEqual([]);
      }
      for (const c of cases) await signal(t.client, { commandId: c.req.commandId, kind: SignalKind.SIGNAL_KIND_STOP, graceMs: 300 });
    }
    const exits = await Promise.all(cases.map((c) => waitExit(t.client, c.req.commandId)));
    // Terminal: the exit record is out. Now nothing may be left, in any state.
    const left: Record<string, unknown> = {};
    const procs = await scanProcesses();
    for (const c of cases) {
      const found = marked(procs, c.mark, c.arg);
      const meta = await metaOf(data.dir, c.req.commandId);
      // (Not "processes in the namespace inode": once the namespace is gone its inode number is
      // reused by the next one, possibly another test's. While it runs, it is unique: see 'stopped'.)
      const cgroups = (await Promise.all((meta.sandbox?.cgroups ?? []).map((g) => access(g.path).then(() => g.path, () => null)))).filter(Boolean);
      if (found.length + cgroups.length > 0) left[c.name] = { found, cgroups };
    }
    expect(left).toEqual({});
    expect(await zombieChildren()).toEqual([]);
    return { cases, exits };
  }

  it(`leaves nothing behind when the main process exits (${FORMS.length} forms)`, async () => {
    expect(FORMS.length).toBeGreaterThanOrEqual(25);
    const { exits } = await runForms('exits');
    for (const e of exits) expect(e.bytes.toString()).toContain('launched');
    expect(exits.every((e) => e.exit.exitCode === 0)).toBe(true);
  });

  it(`leaves nothing behind when the command is stopped (${FORMS.length} forms, SIGTERM then SIGKILL)`, async () => {
    const { exits } = await runForms('stopped');
    for (const e of exits) expect(e.exit.reason).toBe('stopped');
    // The TERM-ignoring forms still end: the escalation reaches the whole namespace.
    expect(exits.every((e) => e.exit.signal === 'SIGTERM' || e.exit.signal === 'SIGKILL')).toBe(true);
  });

  (kind === 'none' ? it.skip : it)('a namespace has its own pid 1: the command sees only its own processes', async () => {
    const req = execRequest('ls /proc | grep -c "^[0-9]"; echo "pid=$$"', { conversationId: `conv-box-${kind}` });
    await exec(t.client, req);
    const out = (await waitExit(t.client, req.commandId)).bytes.toString();
    // init (1), bash, ls and grep: nothing of the host.
    expect(Number(out.split('\n')[0])).toBeLessThanOrEqual(5);
    expect(out).toContain('pid=2\n');
  });
});
