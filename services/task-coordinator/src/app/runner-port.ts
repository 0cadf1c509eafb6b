/** What the coordinator asks a runner to run: one attempt of a task, fenced by its generation. */
export interface ExecOrder {
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly tenant: string;
  readonly epoch: number;
  readonly attempt: number;
  readonly command: string;
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
}

/** A stop (SIGTERM, SIGKILL after `graceMs`, escalated by the runner) or a kill, fenced by the generation it targets. */
export interface SignalOrder {
  readonly commandId: string;
  readonly taskId: string;
  readonly epoch: number;
  readonly attempt: number;
  readonly kind: 'stop' | 'kill';
  readonly graceMs: number;
  readonly reason: string;
}

/** Input for a running command's stdin (then close it when `close`), fenced by the generation it targets. */
export interface StdinOrder {
  readonly commandId: string;
  readonly taskId: string;
  readonly epoch: number;
  readonly attempt: number;
  readonly data: Buffer;
  readonly close: boolean;
}

/** What the runner did with a stdin write. */
export interface StdinOutcome {
  readonly written: number;
  readonly closed: boolean;
  readonly totalWritten: number;
}

/** What the runner did with a signal. */
export type SignalOutcome = 'delivered' | 'already_exited';

/** One command as a runner reports it (Status / List). */
export interface RunnerCommand {
  readonly commandId: string;
  readonly taskId: string;
  readonly epoch: number;
  readonly attempt: number;
  readonly state: 'running' | 'stopping' | 'exited';
  /** Present once exited. */
  readonly exit: { readonly exitCode: number | null; readonly signal: string | null; readonly reason: string; readonly endOffset: number } | null;
}

/** Every command a runner knows, and the boot that answers. */
export interface RunnerListing {
  readonly runnerId: string;
  readonly bootId: string;
  readonly commands: readonly RunnerCommand[];
}

/**
 * The runner as the coordinator sees it (adapter: src/grpc/runner-port.grpc.ts).
 * `exec` throws ValidationError when the runner refuses the command for good, Unavailable when
 * it cannot answer now. `signal` throws Conflict when the runner runs another generation of the
 * command (it signalled nothing), NotFound when it does not know the command, Unavailable otherwise.
 */
export interface RunnerPort {
  exec(address: string, order: ExecOrder): Promise<void>;
  /** True when the runner already knows this attempt (an earlier Exec reached it). */
  knows(address: string, commandId: string, attempt: number): Promise<boolean>;
  signal(address: string, order: SignalOrder): Promise<SignalOutcome>;
  /**
   * Throws Conflict for a stale generation or a command that does not read its input (back-pressure),
   * IllegalState when its stdin is closed or it exited, TooLarge, Unavailable otherwise.
   */
  writeStdin(address: string, order: StdinOrder): Promise<StdinOutcome>;
  /** Throws Unavailable when the runner cannot answer. */
  list(address: string): Promise<RunnerListing>;
  /**
   * A condition wait's probe in the command's sandbox (issue 10.1): a port open, or a path in its
   * workspace. Throws ValidationError for a path the runner refuses, Unavailable otherwise. Optional:
   * ports written before it (test doubles) have none, and the watcher then waits for the timeout.
   */
  probe?(address: string, commandId: string, what: { port: number } | { path: string }): Promise<{ satisfied: boolean; detail: string }>;
  close(): void;
}
