import { z } from 'zod';

/**
 * Settings only the agent runtime reads, parsed from the environment next to the shared Config
 * (`@handplane/contracts` loadConfig, which holds `MODEL_PROVIDER`).
 */
export const runtimeConfigSchema = z.object({
  /** OpenAI-compatible chat completions server (MODEL_PROVIDER=openai). */
  OPENAI_BASE_URL: z.string().url().default('https://api.openai.com/v1'),
  /** Bearer token for it; never logged. */
  OPENAI_API_KEY: z.string().default(''),
  MODEL_NAME: z.string().default('gpt-4o-mini'),
  /** Per model request. */
  MODEL_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  /** JSON approval policy (see app/approval/approval-policy.ts); empty: everything automatic. */
  APPROVAL_POLICY: z.string().default(''),
  /** Run lease duration; the holder renews it every third of it. Another instance takes over a run whose lease expired. */
  RUN_LEASE_MS: z.coerce.number().int().positive().default(30_000),
  /** How often queued work and abandoned runs are looked for. */
  RUN_SWEEP_MS: z.coerce.number().int().positive().default(5_000),
  /** Lease owner name of this instance (default: host name and a random suffix). */
  RUNTIME_INSTANCE_ID: z.string().default(''),
});
export type RuntimeConfig = z.infer<typeof runtimeConfigSchema>;

/** Parses the runtime's own settings; a bad value stops it with a clear message. */
export function loadRuntimeConfig(env: Record<string, string | undefined> = process.env): RuntimeConfig {
  const parsed = runtimeConfigSchema.safeParse(env);
  if (!parsed.success) throw new Error(`invalid agent-runtime configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
