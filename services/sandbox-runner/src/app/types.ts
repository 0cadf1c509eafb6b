/** Which pipe a piece of output came from. */
export type StreamName = 'stdout' | 'stderr';

/** (epoch, attempt): the fence every Exec and Signal carries (DESIGN.md §6). */
export interface Generation {
  readonly epoch: number;
  readonly attempt: number;
}

export function sameGeneration(a: Generation, b: Generation): boolean {
  return a.epoch === b.epoch && a.attempt === b.attempt;
}

/** What `meta.json` holds. Never the environment: env values may be secrets. */
export interface CommandMeta {
  readonly v: 1;
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly tenant: string;
  readonly generation: Generation;
  readonly command: string;
  readonly cwd: string;
  readonly startedAtMs: number;
  /** Process (and process group) id of what the runner spawned (the sandbox launcher); null until spawned or when the spawn failed. */
  pid: number | null;
  /** Identity of that process (host boot id + start time in clock ticks), so a later boot can tell a reused pid apart. */
  processIdentity: ProcessIdentity | null;
  /** The runner boot that spawned it (a later boot that re-adopts the command keeps it). */
  readonly runnerBootId: string;
  /** Committed cursor: bytes below it are durable upstream. */
  ackedOffset: number;
  /** Bytes below this offset were acknowledged and their disk blocks released (absent: 0). */
  freedOffset?: number;
  /** The sandbox the command runs in, once it started (absent in spools of runners before re-adoption). */
  sandbox?: SandboxRecord | null;
  /** The wall-time backstop in force (re-armed after a runner restart). */
  timeoutMs?: number;
  /** Set when the runner began to end the command, so a restarted runner finishes the escalation. */
  stop?: StopRecord | null;
  /**
   * The command's stdin (absent in spools of runners before it): a FIFO in the spool directory when
   * `fifo` (a restarted runner opens it again), whether it was closed on request, and how many bytes
   * were written to it so far (WriteStdin's `totalWritten` goes on counting after a restart).
   */
  stdin?: StdinRecord | null;
}

/** See `CommandMeta.stdin`. */
export interface StdinRecord {
  readonly fifo: boolean;
  readonly closed: boolean;
  readonly bytes: number;
}

/** A stop in progress: SIGTERM sent at `atMs`, SIGKILL due `graceMs` later. */
export interface StopRecord {
  readonly reason: string;
  readonly atMs: number;
  readonly graceMs: number;
}

/**
 * Where a command runs and how to find it again after a runner restart. Identity is the init's pid
 * plus its start time and host boot (plus the namespace inode): a stored pid alone proves nothing.
 */
export interface SandboxRecord {
  readonly kind: 'bwrap' | 'unshare' | 'none';
  /** What the runner spawned (bwrap/unshare, or the init itself); its pid is the sandbox's process group. */
  readonly launcherPid: number;
  /** The init as the host sees it: pid 1 of the namespace, or the parent of the command's group. */
  readonly initPid: number;
  readonly init: ProcessIdentity;
  /** Inode of the PID namespace (null without one). */
  readonly nsInode: string | null;
  /** The command's own process group (its pid), signalled in 'none' mode. */
  readonly commandPgid: number;
  /** The command's cgroup directories (empty without cgroups). */
  readonly cgroups: readonly { readonly path: string; readonly version: 1 | 2 }[];
}

export interface ProcessIdentity {
  readonly hostBootId: string;
  readonly startTicks: string;
}

/** The exit record (`exit.json`), written only once every byte of output is on disk. */
export interface ExitInfo {
  /** Set when the process exited by itself. */
  readonly exitCode: number | null;
  /** Signal name when a signal ended it, '' otherwise. */
  readonly signal: string;
  /** Total bytes of output. */
  readonly endOffset: number;
  readonly startedAtMs: number;
  readonly finishedAtMs: number;
  /** Why it ended when the runner ended it ('' when it ended by itself). */
  readonly reason: string;
}

export type CommandState = 'running' | 'stopping' | 'exited';

/** A command as Status and List report it. */
export interface CommandView {
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly generation: Generation;
  readonly state: CommandState;
  readonly startedAtMs: number;
  readonly outputBytes: number;
  readonly ackedOffset: number;
  readonly exit: ExitInfo | null;
}

/** One item of ReadLog: a chunk of a single stream at an exact offset, or the final exit record. */
export type LogItem = { readonly type: 'chunk'; readonly offset: number; readonly stream: StreamName; readonly data: Buffer } | { readonly type: 'exit'; readonly exit: ExitInfo };

/** A validated Exec request. */
export interface ExecInput {
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly tenant: string;
  readonly generation: Generation;
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export type SignalKind = 'stop' | 'kill';
