import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { SandboxRecord } from '../types';
import type { CommandCgroup } from './cgroups';
import { LAUNCHER_ENV, namespaceArgv, type SandboxHost } from './host';
import { encodeLaunchRequest, INIT_SCRIPT } from './init-script';
import { childrenOf, identityOfSync, nsInodeOfSync, sleep } from './proc';

export interface LaunchSpec {
  readonly command: string;
  /** Absolute working directory inside the workspace. */
  readonly cwd: string;
  /** The command's complete environment: sent to the init on fd 3, never on disk or in argv. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdoutPath: string;
  readonly stderrPath: string;
  readonly statusPath: string;
  /**
   * The command's stdin FIFO (made by the caller): its read end becomes the command's fd 0 and the
   * init holds a writer of its own until told to drop it (see INIT_SCRIPT). Absent, or when the FIFO
   * cannot be opened: stdin is a pipe held by this process (`child.stdin`), closed when it ends.
   */
  readonly stdinFifo?: string;
  readonly cgroup: CommandCgroup | null;
}

export interface Launched {
  /** The launcher, a child of this runner process (its 'exit' is the fast path to notice the end). */
  readonly child: ChildProcess;
  readonly record: SandboxRecord;
  /** What the init could not do (join a cgroup): logged, never fatal. */
  readonly warnings: readonly string[];
  /** How stdin was given: the FIFO (the init holds a writer), or a pipe (`child.stdin`). */
  readonly stdin: 'fifo' | 'pipe';
}

/** The launch failed before the command ran; `child` (if any) is gone or going. */
export class LaunchFailed extends Error {
  constructor(message: string, readonly child: ChildProcess | null) {
    super(message);
    this.name = 'LaunchFailed';
  }
}

/** The launcher argv: [prlimit …] [bwrap|unshare …] perl -e INIT (the command itself travels on fd 3). */
export function launchArgv(host: SandboxHost, cwd: string): string[] {
  const init = [host.bin.perl, '-e', INIT_SCRIPT];
  const limits = host.prlimit && host.bin.prlimit ? [host.bin.prlimit, ...(host.prlimit.asBytes > 0 ? [`--as=${host.prlimit.asBytes}`] : []), ...(host.prlimit.nproc > 0 ? [`--nproc=${host.prlimit.nproc}`] : []), '--'] : [];
  return [...limits, ...namespaceArgv(host.kind, host.bin, cwd, init)];
}

/**
 * Starts the command in its sandbox and waits until the init reports it running: by then its
 * identity (pid, start time, namespace) is known, so a runner that crashes right after Exec answers
 * can still find it. stdout/stderr go straight into the raw files: nothing the command writes is
 * held by this process, so a runner restart loses no byte. stdin: see `LaunchSpec.stdinFifo`.
 */
export async function launchSandbox(host: SandboxHost, spec: LaunchSpec, timeoutMs = 10_000): Promise<Launched> {
  const argv = launchArgv(host, spec.cwd);
  const fds = [openSync(spec.stdoutPath, 'a', 0o600), openSync(spec.stderrPath, 'a', 0o600), openSync(spec.statusPath, 'w+', 0o600)];
  // With a FIFO: read-write first (Linux opens a FIFO so without waiting), so that the read-only open
  // finds a writer and does not block either. Only the read end goes to the launcher; this process
  // keeps the read-write one until the init holds its own writer (its `ok`), so the command can never
  // see end-of-file in between. A FIFO that cannot be opened falls back to a pipe.
  const fifo = spec.stdinFifo ? openFifo(spec.stdinFifo) : null;
  let child: ChildProcess;
  try {
    // Without a FIFO, stdin is a pipe this runner holds the write end of (WriteStdin); the command
    // reads end-of-file once it is closed on request, or when this runner process ends.
    const stdio = fifo ? [fifo.read, fds[0], fds[1], 'pipe', fds[2]] : ['pipe', fds[0], fds[1], 'pipe', fds[2]];
    child = spawn(argv[0], argv.slice(1), { cwd: spec.cwd, env: LAUNCHER_ENV, detached: true, stdio: stdio as ('pipe' | number)[] });
  } catch (e) {
    if (fifo) closeSync(fifo.hold);
    throw e;
  } finally {
    for (const fd of fds) closeSync(fd);
    if (fifo) closeSync(fifo.read);
  }
  try {
    return await started(host, spec, child, fifo !== null, timeoutMs);
  } finally {
    if (fifo) closeSync(fifo.hold);
  }
}

/** The two ends of the stdin FIFO this process opens for the launch, or null (then stdin is a pipe). */
function openFifo(path: string): { hold: number; read: number } | null {
  let hold: number | null = null;
  try {
    hold = openSync(path, 'r+');
    return { hold, read: openSync(path, 'r') };
  } catch {
    if (hold !== null) closeSync(hold);
    return null;
  }
}

/** Sends the launch request and waits for the init's answer (the command runs). */
async function started(host: SandboxHost, spec: LaunchSpec, child: ChildProcess, fifo: boolean, timeoutMs: number): Promise<Launched> {
  const ctl = child.stdio[3] as Socket | null;
  if (!ctl || child.pid === undefined) throw new LaunchFailed('the sandbox launcher could not be spawned', child);
  // The init waits for the launch request before it starts the command, so it is found (and its
  // identity taken) while it certainly runs: a command that ends at once cannot race this.
  const found = host.kind === 'none' ? { pid: child.pid, ns: null } : await waitForInit(child, timeoutMs);
  const init = identityOfSync(found.pid);
  if (!init) {
    child.kill('SIGKILL');
    throw new LaunchFailed('the sandbox init vanished before it was sent the command', child);
  }
  const mode = host.kind === 'none' ? 'group' : 'ns';
  ctl.write(encodeLaunchRequest(fifo ? `${mode}+hold` : mode, spec.cgroup?.procsFiles ?? [], spec.env, [host.bin.bash, '-c', spec.command]));
  const reply = await handshake(child, ctl, timeoutMs);
  if (!Number.isSafeInteger(reply.commandPid) || reply.commandPid <= 1 || (found.ns !== null && reply.nsInode !== found.ns)) {
    child.kill('SIGKILL');
    throw new LaunchFailed(`the sandbox init reported an unexpected start (${reply.nsInode} ${reply.commandPid})`, child);
  }
  const record: SandboxRecord = {
    kind: host.kind,
    launcherPid: child.pid,
    initPid: found.pid,
    init,
    nsInode: found.ns,
    commandPgid: reply.commandPid,
    cgroups: spec.cgroup?.dirs ?? [],
  };
  return { child, record, warnings: reply.warnings, stdin: fifo ? 'fifo' : 'pipe' };
}

interface Reply {
  readonly nsInode: string;
  readonly commandPid: number;
  readonly warnings: string[];
}

function handshake(child: ChildProcess, ctl: Socket, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let text = '';
    const warnings: string[] = [];
    const fail = (why: string) => {
      cleanup();
      child.kill('SIGKILL');
      reject(new LaunchFailed(why, child));
    };
    const timer = setTimeout(() => fail(`the sandbox did not start within ${timeoutMs} ms`), timeoutMs);
    const onData = (d: Buffer) => {
      text += d.toString('utf8');
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        const [word, ...rest] = line.split(' ');
        if (word === 'warn') warnings.push(rest.join(' '));
        else if (word === 'err') return fail(`the sandbox init failed: ${rest.join(' ')}`);
        else if (word === 'ok') {
          cleanup();
          ctl.destroy();
          return resolve({ nsInode: rest[0] ?? '', commandPid: Number(rest[1]), warnings });
        }
      }
    };
    // Not the launcher's 'exit': it may come before the last data of the socket. The socket closes
    // once every holder (launcher and init) is gone; no 'ok' by then means the command never ran.
    const onClose = () => fail(`the sandbox launcher exited (${child.signalCode ?? `code ${child.exitCode}`}) before the command started`);
    const onError = (err: Error) => fail(`the sandbox launcher could not start: ${err.message}`);
    const cleanup = () => {
      clearTimeout(timer);
      ctl.off('data', onData);
      ctl.off('close', onClose);
      child.off('error', onError);
    };
    ctl.on('data', onData);
    ctl.on('error', () => undefined);
    ctl.once('close', onClose);
    child.once('error', onError);
  });
}

/** The launcher's child in a PID namespace other than ours: the namespace's pid 1 (bwrap and unshare fork once). */
async function waitForInit(child: ChildProcess, timeoutMs: number): Promise<{ pid: number; ns: string }> {
  const own = nsInodeOfSync(process.pid);
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) throw new LaunchFailed(`the sandbox launcher exited (${child.signalCode ?? `code ${child.exitCode}`}) before the command started`, child);
    for (const pid of await childrenOf(child.pid)) {
      const ns = nsInodeOfSync(pid);
      if (ns && ns !== own) return { pid, ns };
    }
    if (Date.now() >= until) {
      child.kill('SIGKILL');
      throw new LaunchFailed(`the sandbox did not start within ${timeoutMs} ms`, child);
    }
    await sleep(1);
  }
}
