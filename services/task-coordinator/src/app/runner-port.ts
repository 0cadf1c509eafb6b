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

/**
 * The runner as the coordinator sees it (adapter: src/grpc/runner-port.grpc.ts).
 * `exec` throws ValidationError when the runner refuses the command for good, Unavailable when
 * it cannot answer now.
 */
export interface RunnerPort {
  exec(address: string, order: ExecOrder): Promise<void>;
  /** True when the runner already knows this attempt (an earlier Exec reached it). */
  knows(address: string, commandId: string, attempt: number): Promise<boolean>;
  close(): void;
}
