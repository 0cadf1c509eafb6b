import { z } from 'zod';

/**
 * Settings only the ingestor reads, parsed from the environment next to the shared Config
 * (`@handplane/contracts` loadConfig), as the runner does with its own.
 */
export const ingestorConfigSchema = z.object({
  /**
   * Most bytes of one command's output the Command Log keeps: the first half and the last half,
   * with the range between recorded as dropped (never a silent cut). 0 = keep everything.
   */
  OUTPUT_CAP_BYTES: z.coerce.number().int().nonnegative().default(256 * 1024 * 1024),
  /**
   * A running command whose output ends with a prompt-like line (`[y/N]`, `Password:`, …) and then
   * stays quiet this long is reported to its conversation as `task.awaiting_input`. 0 = off.
   */
  PROMPT_QUIET_MS: z.coerce.number().int().nonnegative().default(1500),
});
export type IngestorConfig = z.infer<typeof ingestorConfigSchema>;

/** Parses the ingestor's own settings; a bad value stops it with a clear message. */
export function loadIngestorConfig(env: Record<string, string | undefined> = process.env): IngestorConfig {
  const parsed = ingestorConfigSchema.safeParse(env);
  if (!parsed.success) throw new Error(`invalid log-ingestor configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
