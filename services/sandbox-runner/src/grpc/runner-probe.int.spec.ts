import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { unary } from '@handplane/platform';
import { SignalKind, type ProbeRequest, type ProbeResponse } from '@handplane/proto';
import { testNats } from '@handplane/testing';
import { exec, execRequest, signal, startTestRunner, tempDataDir, waitFor, type TestNats } from '../runner.spec-helper';

/** The Probe RPC of condition waits (issue 10.1): a port on the host's loopback, a path inside the command's workspace only. */
describe('sandbox-runner Probe (real runner, real gRPC)', () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let t: Awaited<ReturnType<typeof startTestRunner>>;
  let server: Server | undefined;
  const req = execRequest('touch made-by-the-command; sleep 60', { conversationId: 'conv-probe' });
  const probe = (what: ProbeRequest['what'], commandId = req.commandId) => unary<ProbeRequest, ProbeResponse>(t.client.probe.bind(t.client), { commandId, what });

  beforeAll(async () => {
    env = await testNats('runprobe');
    data = await tempDataDir();
    t = await startTestRunner(env, data.dir);
    await exec(t.client, req);
  });
  afterAll(async () => {
    server?.close();
    await signal(t.client, { commandId: req.commandId, kind: SignalKind.SIGNAL_KIND_KILL }).catch(() => undefined);
    await t?.stop();
    await env?.close();
    await data?.remove();
  });

  it('finds a file the command made in its workspace, and says when one does not exist', async () => {
    await waitFor(async () => (await probe({ $case: 'path', value: 'made-by-the-command' })).satisfied, 10_000, 'the file');
    expect(await probe({ $case: 'path', value: 'made-by-the-command' })).toEqual({ satisfied: true, detail: 'made-by-the-command exists' });
    expect(await probe({ $case: 'path', value: 'not/there' })).toEqual({ satisfied: false, detail: 'not/there does not exist' });
  });

  it('refuses paths that lead out of the workspace, symlinks included (INVALID_ARGUMENT)', async () => {
    const workspace = join(data.dir, 'workspaces', 'conv-probe');
    await mkdir(join(data.dir, 'secret'), { recursive: true });
    await writeFile(join(data.dir, 'secret', 'key'), 'x');
    await symlink(join(data.dir, 'secret'), join(workspace, 'escape'));
    for (const value of ['../secret/key', '/etc/passwd', 'escape/key']) await expect(probe({ $case: 'path', value })).rejects.toMatchObject({ code: 3 });
  });

  it('sees a port open on the loopback, and a closed one', async () => {
    server = createServer((s) => s.end());
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    expect(await probe({ $case: 'port', value: port })).toEqual({ satisfied: true, detail: `port ${port} accepted a connection` });
    server.close();
    await new Promise((r) => setTimeout(r, 100));
    expect((await probe({ $case: 'port', value: port })).satisfied).toBe(false);
    await expect(probe({ $case: 'port', value: 70000 })).rejects.toMatchObject({ code: 3 });
    await expect(probe({ $case: 'port', value: 80 }, 'no-such-command')).rejects.toMatchObject({ code: 5 });
  });
});
