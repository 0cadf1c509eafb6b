import { z } from 'zod';

const int = (d: number) => z.coerce.number().int().nonnegative().default(d);

/** Configuration shared by every service (DESIGN.md §10), read from the environment once at start. */
export const configSchema = z.object({
  NODE_ENV: z.string().default('development'),
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  /** Namespaces streams, subjects and buckets; tests use a unique one each. */
  NATS_PREFIX: z.string().default(''),
  DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/handplane'),
  FOREGROUND_WINDOW_MS: int(60_000),
  TASK_DEADLINE_MS: int(3_600_000),
  TASK_DEADLINE_MAX_MS: int(24 * 3_600_000),
  STOP_GRACE_MS: int(10_000),
  RUNNER_LOST_AFTER_MS: int(30_000),
  /** Attempts a task may make when its runner is lost or its start fails for a transient reason (1 = no retry). */
  RETRY_MAX_ATTEMPTS: z.coerce.number().int().positive().default(1),
  /** How often the coordinator compares unfinished tasks with what their runners report (and once at start-up). */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().positive().default(30_000),
  /** Budgets (issue 10.5), per conversation and per tenant; 0 = no limit. Unfinished tasks at once: */
  BUDGET_CONV_MAX_CONCURRENT: int(0),
  BUDGET_TENANT_MAX_CONCURRENT: int(0),
  /** Summed task runtime (start → finish or now), all tasks of the scope: */
  BUDGET_CONV_MAX_RUNTIME_MS: int(0),
  BUDGET_TENANT_MAX_RUNTIME_MS: int(0),
  /** Summed output bytes (committed by the ingestor), all tasks of the scope: */
  BUDGET_CONV_MAX_OUTPUT_BYTES: int(0),
  BUDGET_TENANT_MAX_OUTPUT_BYTES: int(0),
  /** An unfinished task this long past its deadline is reported overdue (registry and coordinator report). */
  OVERDUE_GRACE_MS: int(60_000),
  /** How often the coordinator logs and publishes the overdue report. */
  OVERDUE_REPORT_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  SSE_HEARTBEAT_MS: int(15_000),
  /** An SSE client whose unsent bytes exceed this is cut off (it resumes with Last-Event-ID). */
  SSE_MAX_BUFFER_BYTES: z.coerce.number().int().positive().default(1024 * 1024),
  /** Key of the short-lived SSE tickets (derived from JWT_SECRET when empty). */
  SSE_TICKET_SECRET: z.string().default(''),
  /** Per-user request budget of the gateway (token bucket); 0 turns it off. */
  RATE_LIMIT_PER_MINUTE: int(600),
  /** `postgres`: one bucket per user shared by every gateway replica (default); `memory`: per instance. */
  RATE_LIMIT_STORE: z.enum(['postgres', 'memory']).default('postgres'),
  /** How many requests a user may make at once before the per-minute rate applies. */
  RATE_LIMIT_BURST: z.coerce.number().int().positive().default(120),
  GATEWAY_PORT: int(8080),
  RUNTIME_PORT: int(8081),
  COORDINATOR_PORT: int(8082),
  INGESTOR_PORT: int(8083),
  RUNNER_HTTP_PORT: int(8084),
  RUNNER_PORT: int(50051),
  RUNNER_HOST: z.string().default('127.0.0.1'),
  RUNNER_ID: z.string().default(''),
  RUNNER_DATA_DIR: z.string().default('.data/runner'),
  MODEL_PROVIDER: z.enum(['scripted', 'openai']).default('scripted'),
  JWT_SECRET: z.string().default('dev-secret-change-me'),
  JWKS_URL: z.string().default(''),
  LOG_LEVEL: z.string().default('info'),
  /** Operator credential of the gateway's `/v1/admin/*` (projections); empty turns the admin API off. */
  ADMIN_TOKEN: z.string().default(''),
  /** Replicas of each stream (3 on a clustered JetStream). */
  STREAM_REPLICAS: int(1),
});
export type Config = z.infer<typeof configSchema>;

/** Parses the environment; a bad value stops the service with a clear message. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}
