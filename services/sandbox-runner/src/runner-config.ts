import { z } from 'zod';

/**
 * Settings only the runner reads, parsed from the environment next to the shared Config
 * (`@handplane/contracts` loadConfig). TLS is all or nothing.
 */
export const runnerConfigSchema = z
  .object({
    /** Most commands running at once; Exec beyond it answers UNAVAILABLE. Also published in the registry. */
    RUNNER_CAPACITY: z.coerce.number().int().positive().default(64),
    /** How long a finished, fully acked spool is kept before it is freed. */
    RUNNER_SPOOL_RETENTION_MS: z.coerce.number().int().nonnegative().default(3_600_000),
    /** PEM paths for mTLS (server certificate, its key, the CA of client certificates). */
    RUNNER_TLS_CERT: z.string().default(''),
    RUNNER_TLS_KEY: z.string().default(''),
    RUNNER_TLS_CA: z.string().default(''),
    /** "host:port" published in the registry when RUNNER_HOST is a wildcard or not reachable as is. */
    RUNNER_ADVERTISE_ADDRESS: z.string().default(''),
    /** Containment: a PID namespace by bubblewrap or unshare ('auto' tries both), or 'none' (a process group). */
    RUNNER_SANDBOX: z.enum(['auto', 'bwrap', 'unshare', 'none']).default('auto'),
    /** Per-command cgroups (v2 and/or v1, whichever is writable) for limits and membership; 'off' uses prlimit only. */
    RUNNER_CGROUPS: z.enum(['auto', 'off']).default('auto'),
    /** Most processes one command may have at once (pids.max; 0 = no limit). */
    RUNNER_PIDS_MAX: z.coerce.number().int().nonnegative().default(1024),
    /** Most memory one command may use (memory.max; 0 = no limit). */
    RUNNER_MEMORY_MAX_BYTES: z.coerce.number().int().nonnegative().default(4 * 1024 ** 3),
    /** Most bytes of output all spools may hold together before a command is killed with reason spool_full (0 = the disk's size). */
    RUNNER_SPOOL_MAX_BYTES: z.coerce.number().int().nonnegative().default(0),
    /** What a runner stop does to running commands: 'detach' leaves them for the next runner to re-adopt, 'stop' ends them. */
    RUNNER_ON_SHUTDOWN: z.enum(['detach', 'stop']).default('detach'),
  })
  .refine((c) => [c.RUNNER_TLS_CERT, c.RUNNER_TLS_KEY, c.RUNNER_TLS_CA].every((v) => v === '') || [c.RUNNER_TLS_CERT, c.RUNNER_TLS_KEY, c.RUNNER_TLS_CA].every((v) => v !== ''), {
    message: 'set all of RUNNER_TLS_CERT, RUNNER_TLS_KEY and RUNNER_TLS_CA, or none',
    path: ['RUNNER_TLS_CERT'],
  });
export type RunnerConfig = z.infer<typeof runnerConfigSchema>;

/** Parses the runner's own settings; a bad value stops the runner with a clear message. */
export function loadRunnerConfig(env: Record<string, string | undefined> = process.env): RunnerConfig {
  const parsed = runnerConfigSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`invalid runner configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}
