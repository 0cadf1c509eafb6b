import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { loadConfig } from '@handplane/contracts';
import { createLogger, deadline, RunnerClients, unary } from '@handplane/platform';
import type { AckRequest, CommandStatus, ExecRequest, ExecResponse, ExitRecord, LogRecord, OutputChunk, ReadLogRequest, RunnerClient, SignalRequest, SignalResponse } from '@handplane/proto';
import { SignalKind } from '@handplane/proto';
import { NATS_URL, testNats, waitFor } from '@handplane/testing';
import type { CommandMeta } from './app/types';
import { startRunner, type RunnerOverrides, type RunningRunner } from './service';

/** Test support for the runner's int specs (excluded from the build). */

export type TestNats = Awaited<ReturnType<typeof testNats>>;

export async function tempDataDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'hp-runner-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Starts a runner in-process on free ports with its own data dir, and a real gRPC client to it.
 * Unless `vars` says otherwise its stop ends the commands still running (RUNNER_ON_SHUTDOWN=stop),
 * so a test leaves no process behind.
 */
export async function startTestRunner(env: TestNats, dataDir: string, runnerVars: Record<string, string> = {}, overrides: RunnerOverrides = {}) {
  // RUNNER_SANDBOX in the test environment runs the whole suite with that containment (e.g. unshare where bwrap is installed).
  const vars = { RUNNER_ON_SHUTDOWN: 'stop', ...(process.env.RUNNER_SANDBOX ? { RUNNER_SANDBOX: process.env.RUNNER_SANDBOX } : {}), ...runnerVars };
  const config = loadConfig({ NATS_URL, NATS_PREFIX: env.prefix, RUNNER_HOST: '127.0.0.1', RUNNER_PORT: '0', RUNNER_HTTP_PORT: '0', STOP_GRACE_MS: '300', ...vars });
  const runner: RunningRunner = await startRunner(config, { dataDir, env: vars, logger: createLogger('sandbox-runner-test', process.env.TEST_LOG_LEVEL ?? 'error'), ...overrides });
  const clients = new RunnerClients();
  const client = clients.get(`127.0.0.1:${runner.grpcPort}`);
  return {
    runner,
    client,
    async stop() {
      clients.close();
      await runner.stop();
    },
  };
}

/** The runner a describe block shares, see `useTestRunner`. */
export interface SharedTestRunner {
  /** The block's own NATS prefix. */
  readonly env: TestNats;
  readonly dataDir: string;
  readonly runner: RunningRunner;
  readonly client: RunnerClient;
}

/**
 * Registers a beforeAll that starts a runner for the calling describe block (own NATS prefix
 * labelled `label`, own data dir) and an afterAll that stops it and removes both. The fields of the
 * answer may be read from the first hook or test on.
 */
export function useTestRunner(label: string): SharedTestRunner {
  let env: TestNats | undefined;
  let data: Awaited<ReturnType<typeof tempDataDir>> | undefined;
  let t: Awaited<ReturnType<typeof startTestRunner>> | undefined;
  beforeAll(async () => {
    env = await testNats(label);
    data = await tempDataDir();
    t = await startTestRunner(env, data.dir);
  });
  afterAll(async () => {
    await t?.stop();
    await env?.close();
    await data?.remove();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error(`the ${label} runner is used before its beforeAll started it`);
    return v;
  };
  return {
    get env() {
      return ready(env);
    },
    get dataDir() {
      return ready(data).dir;
    },
    get runner() {
      return ready(t).runner;
    },
    get client() {
      return ready(t).client;
    },
  };
}

let seq = 0;
/** A fresh command id per call (ids are one attempt each). */
export function newId(label = 'c'): string {
  seq += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${seq}`;
}

export function execRequest(command: string, over: Partial<ExecRequest> = {}): ExecRequest {
  return { commandId: newId(), taskId: newId('t'), conversationId: 'conv-1', tenant: 'acme', generation: { epoch: 1, attempt: 1 }, command, cwd: '', env: {}, timeoutMs: 0, ...over };
}

export const exec = (c: RunnerClient, req: ExecRequest) => unary<ExecRequest, ExecResponse>(c.exec.bind(c), req);
export const status = (c: RunnerClient, commandId: string) => unary<{ commandId: string }, CommandStatus>(c.status.bind(c), { commandId });
export const ack = (c: RunnerClient, commandId: string, offset: number) => unary<AckRequest, { ackedOffset: number }>(c.ack.bind(c), { commandId, offset });
export const signal = (c: RunnerClient, req: Partial<SignalRequest> & { commandId: string }) =>
  unary<SignalRequest, SignalResponse>(c.signal.bind(c), { taskId: '', generation: { epoch: 1, attempt: 1 }, kind: SignalKind.SIGNAL_KIND_STOP, graceMs: 0, reason: 'test', ...req });

export interface ReadResult {
  readonly records: LogRecord[];
  readonly chunks: OutputChunk[];
  readonly exit: ExitRecord | undefined;
  readonly bytes: Buffer;
}

/** Reads a log to its end; checks that offsets are contiguous and the exit record (if any) is last. */
export function readLog(c: RunnerClient, req: Partial<ReadLogRequest> & { commandId: string }, timeoutMs = 30_000): Promise<ReadResult> {
  return new Promise((resolve, reject) => {
    const records: LogRecord[] = [];
    const call = c.readLog({ fromOffset: 0, follow: false, maxChunkBytes: 0, ...req }, { deadline: deadline(timeoutMs) });
    call.on('data', (r: LogRecord) => records.push(r));
    call.on('error', reject);
    call.on('end', () => {
      const chunks = records.flatMap((r) => (r.record?.$case === 'chunk' ? [r.record.value] : []));
      const exits = records.flatMap((r, i) => (r.record?.$case === 'exit' ? [{ i, exit: r.record.value }] : []));
      if (exits.length > 1 || (exits.length === 1 && exits[0].i !== records.length - 1)) return reject(new Error('exit record is not the single last record'));
      let expected = req.fromOffset ?? 0;
      for (const ch of chunks) {
        if (ch.offset !== expected) return reject(new Error(`chunk at ${ch.offset}, expected ${expected}`));
        expected += ch.data.length;
      }
      resolve({ records, chunks, exit: exits[0]?.exit, bytes: Buffer.concat(chunks.map((ch) => ch.data)) });
    });
  });
}

/** Waits for the exit record through a following ReadLog. */
export async function waitExit(c: RunnerClient, commandId: string, timeoutMs = 30_000): Promise<ReadResult & { exit: ExitRecord }> {
  const r = await readLog(c, { commandId, follow: true }, timeoutMs);
  if (!r.exit) throw new Error('no exit record');
  return { ...r, exit: r.exit };
}

/** The gRPC status code a call failed with. */
export async function codeOf(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as ServiceError;
    return { code: err.code, details: err.details };
  }
  throw new Error('call succeeded, expected an error');
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** True while any process is in the group. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

/** Pids of group members that are still alive (zombies excluded), read from /proc. */
export async function liveGroupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const pid of (await readdir('/proc')).filter((n) => /^\d+$/.test(n))) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') out.push(Number(pid));
  }
  return out;
}

/**
 * The group is really gone: no live member when the exit record is out, and the group itself
 * disappears (ESRCH) once pid 1 has reaped the zombies of killed orphans (lazily on some hosts).
 */
export async function expectGroupGone(pgid: number): Promise<void> {
  expect(await liveGroupMembers(pgid)).toEqual([]);
  await waitFor(() => !groupAlive(pgid), 15_000, `process group ${pgid} to disappear`);
  expect(() => process.kill(-pgid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
}

export { waitFor };

/** Which PID-namespace sandboxes work on this host, probed the way the runner probes them (synchronously, for describe.each). */
export function availableSandboxes(): ('bwrap' | 'unshare')[] {
  const perl = ['perl', '-e', 'exit($$ == 1 ? 0 : 3)'];
  const probes = {
    bwrap: ['bwrap', '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--as-pid-1', '--', ...perl],
    unshare: ['unshare', '--pid', '--fork', '--kill-child', '--mount-proc', ...perl],
  } as const;
  return (['bwrap', 'unshare'] as const).filter((k) => spawnSync(probes[k][0], probes[k].slice(1), { stdio: 'ignore', timeout: 10_000 }).status === 0);
}

export interface ProcInfo {
  readonly pid: number;
  readonly state: string;
  readonly environ: readonly string[];
  readonly argv: readonly string[];
  /** PID namespace inode. */
  readonly ns: string;
}

/** One pass over /proc (environment, argv and state of every process but this one). */
export async function scanProcesses(): Promise<ProcInfo[]> {
  const pids = (await readdir('/proc')).filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  const all = await Promise.all(
    pids.map(async (name) => {
      const [environ, cmdline, stat, ns] = await Promise.all([readFile(`/proc/${name}/environ`, 'latin1').catch(() => ''), readFile(`/proc/${name}/cmdline`, 'latin1').catch(() => ''), readFile(`/proc/${name}/stat`, 'utf8').catch(() => ''), readlink(`/proc/${name}/ns/pid`).catch(() => '')]);
      return { pid: Number(name), state: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '?', environ: environ.split('\0'), argv: cmdline.split('\0'), ns: /\[(\d+)\]/.exec(ns)?.[1] ?? '' };
    }),
  );
  return all.filter((p) => p.argv.length > 0);
}

/**
 * Processes that carry `HP_MARK=<mark>` in their environment or `token` in their argv, in any state.
 * (A zombie shows neither: see zombieChildren.)
 */
export function marked(procs: readonly ProcInfo[], mark: string, token: string): { pid: number; state: string; argv: string }[] {
  return procs.filter((p) => p.environ.includes(`HP_MARK=${mark}`) || p.argv.includes(token)).map((p) => ({ pid: p.pid, state: p.state, argv: p.argv.join(' ').trim() }));
}

export async function markedProcesses(mark: string, token: string): Promise<{ pid: number; state: string; argv: string }[]> {
  return marked(await scanProcesses(), mark, token);
}

/** Zombie children of this process (the in-process runner): it must reap everything it spawned. */
export async function zombieChildren(): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' && Number(ppid) === process.pid) out.push(Number(name));
  }
  return out;
}

/** The command's meta.json as the runner wrote it. */
export async function metaOf(dataDir: string, commandId: string): Promise<CommandMeta> {
  return JSON.parse(await readFile(join(dataDir, 'commands', commandId, 'meta.json'), 'utf8')) as CommandMeta;
}
