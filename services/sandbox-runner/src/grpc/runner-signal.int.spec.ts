import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { CommandState, SignalKind, SignalOutcome } from '@handplane/proto';
import { codeOf, exec, execRequest, expectGroupGone, groupAlive, signal, status, useTestRunner, waitExit, waitFor } from '../runner.spec-helper';

describe('sandbox-runner: signals and process groups (real processes)', () => {
  const t = useTestRunner('runsig');

  /** Starts a command and waits until it printed `ready` (so traps are in place). */
  async function startReady(command: string, over = {}) {
    const req = execRequest(command, over);
    const r = await exec(t.client, req);
    await waitFor(async () => (await status(t.client, req.commandId)).outputBytes > 0, 10_000, 'ready');
    expect(r.created).toBe(true);
    return { req, pgid: pidOf(req.commandId) };
  }

  const pids = new Map<string, number>();
  function pidOf(commandId: string): number {
    const meta = JSON.parse(readFileSync(join(t.dataDir, 'commands', commandId, 'meta.json'), 'utf8')) as { pid: number };
    pids.set(commandId, meta.pid);
    return meta.pid;
  }

  it('drops a signal with a stale generation: FAILED_PRECONDITION "stale…", the process keeps running', async () => {
    const { req, pgid } = await startReady('echo ready; sleep 30', { generation: { epoch: 3, attempt: 2 } });
    for (const generation of [{ epoch: 3, attempt: 1 }, { epoch: 2, attempt: 2 }]) {
      const e = await codeOf(signal(t.client, { commandId: req.commandId, generation, kind: SignalKind.SIGNAL_KIND_KILL }));
      expect(e.code).toBe(grpcStatus.FAILED_PRECONDITION);
      expect(e.details).toMatch(/^stale/);
    }
    expect(groupAlive(pgid)).toBe(true);
    expect((await status(t.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_RUNNING);
    await signal(t.client, { commandId: req.commandId, generation: { epoch: 3, attempt: 2 }, kind: SignalKind.SIGNAL_KIND_KILL });
    await waitExit(t.client, req.commandId);
    await expectGroupGone(pgid);
  });

  it('STOP ends a command with SIGTERM to its group: stopping, then exited with reason "stopped"', async () => {
    const { req, pgid } = await startReady('echo ready; sleep 30 & sleep 30; wait');
    const r = await signal(t.client, { commandId: req.commandId, graceMs: 300 });
    expect(r.outcome).toBe(SignalOutcome.SIGNAL_OUTCOME_DELIVERED);
    expect(r.status?.state).toBe(CommandState.COMMAND_STATE_STOPPING);
    const { exit } = await waitExit(t.client, req.commandId);
    expect(exit).toMatchObject({ signal: 'SIGTERM', reason: 'stopped' });
    expect(exit.exitCode).toBeUndefined();
    await expectGroupGone(pgid);
    const again = await signal(t.client, { commandId: req.commandId });
    expect(again.outcome).toBe(SignalOutcome.SIGNAL_OUTCOME_ALREADY_EXITED);
    expect(again.status?.state).toBe(CommandState.COMMAND_STATE_EXITED);
  });

  it('STOP escalates to SIGKILL after the grace when the command ignores SIGTERM', async () => {
    const { req, pgid } = await startReady(`trap '' TERM; echo ready; sleep 30`);
    await signal(t.client, { commandId: req.commandId, graceMs: 300 });
    // Still there after the SIGTERM: the trap ignores it.
    expect(groupAlive(pgid)).toBe(true);
    expect((await status(t.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_STOPPING);
    const { exit } = await waitExit(t.client, req.commandId);
    expect(exit).toMatchObject({ signal: 'SIGKILL', reason: 'stopped' });
    await expectGroupGone(pgid);
  });

  it('KILL ends the whole group at once with reason "killed"', async () => {
    const { req, pgid } = await startReady(`trap '' TERM; echo ready; sleep 30 & sleep 30`);
    const r = await signal(t.client, { commandId: req.commandId, kind: SignalKind.SIGNAL_KIND_KILL });
    expect(r.outcome).toBe(SignalOutcome.SIGNAL_OUTCOME_DELIVERED);
    const { exit } = await waitExit(t.client, req.commandId);
    expect(exit).toMatchObject({ signal: 'SIGKILL', reason: 'killed' });
    await expectGroupGone(pgid);
  });

  it('a command that leaves `sleep 60 &` behind still finishes: the group is killed after the main process exits', async () => {
    const req = execRequest('sleep 60 & echo started');
    await exec(t.client, req);
    const pgid = pidOf(req.commandId);
    const { exit, bytes } = await waitExit(t.client, req.commandId);
    expect(bytes.toString()).toBe('started\n');
    expect(exit).toMatchObject({ exitCode: 0, signal: '', endOffset: 8 });
    await expectGroupGone(pgid);
  });

  it('stops a command at its own timeout with reason "timeout"', async () => {
    const req = execRequest('sleep 30', { timeoutMs: 200 });
    await exec(t.client, req);
    expect((await waitExit(t.client, req.commandId)).exit).toMatchObject({ signal: 'SIGTERM', reason: 'timeout' });
  });

  it('answers NOT_FOUND for an unknown command and INVALID_ARGUMENT for a missing kind', async () => {
    expect((await codeOf(signal(t.client, { commandId: 'nope' }))).code).toBe(grpcStatus.NOT_FOUND);
    const req = execRequest('true');
    await exec(t.client, req);
    expect((await codeOf(signal(t.client, { commandId: req.commandId, kind: SignalKind.SIGNAL_KIND_UNSPECIFIED }))).code).toBe(grpcStatus.INVALID_ARGUMENT);
  });

  afterAll(() => {
    // Belt and braces: nothing this file started may outlive it.
    for (const pgid of pids.values()) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  });
});
