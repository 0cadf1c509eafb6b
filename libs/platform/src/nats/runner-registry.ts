import { Kvm, type KV } from '@nats-io/kv';
import { z } from 'zod';
import type { Nats } from './connect';

/** What a runner publishes about itself in the registry bucket. */
export const runnerRecordSchema = z.object({
  runnerId: z.string(),
  address: z.string(),
  capacity: z.number().int().nonnegative(),
  running: z.number().int().nonnegative(),
  version: z.string(),
  bootId: z.string(),
  heartbeatAt: z.string(),
});
export type RunnerRecord = z.infer<typeof runnerRecordSchema>;

/**
 * The runner registry: a NATS KV bucket of runner records, refreshed by each runner's heartbeat.
 * A runner whose last heartbeat is older than `lostAfterMs` is treated as lost.
 */
export class RunnerRegistry {
  private constructor(
    private readonly kv: KV,
    private readonly nats: Nats,
    private readonly bucket: string,
  ) {}

  static async open(nats: Nats, bucket: string, replicas = 1): Promise<RunnerRegistry> {
    const kvm = new Kvm(nats.js);
    const kv = await kvm.create(bucket, { history: 1, replicas: Math.max(1, replicas) });
    return new RunnerRegistry(kv, nats, bucket);
  }

  /** Writes (or refreshes) a runner's record. */
  async heartbeat(record: RunnerRecord): Promise<void> {
    await this.kv.put(record.runnerId, JSON.stringify(runnerRecordSchema.parse(record)));
  }

  /** Removes a runner that is shutting down cleanly. */
  async deregister(runnerId: string): Promise<void> {
    await this.kv.delete(runnerId);
  }

  /** One runner's record, whatever its age. */
  async get(runnerId: string): Promise<RunnerRecord | null> {
    const e = await this.kv.get(runnerId);
    if (!e || e.operation !== 'PUT') return null;
    const parsed = runnerRecordSchema.safeParse(e.json());
    return parsed.success ? parsed.data : null;
  }

  /** Every registered runner, whatever its age. */
  async list(): Promise<RunnerRecord[]> {
    const out: RunnerRecord[] = [];
    // The bucket's subjects from the stream's info, not `kv.keys()`: that creates a consumer per call
    // which outlives it on the server, and dispatch lists runners for every task (thousands piled up).
    const prefix = `$KV.${this.bucket}.`;
    const info = await this.nats.jsm.streams.info(`KV_${this.bucket}`, { subjects_filter: `${prefix}>` });
    const names = Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length));
    for (const k of names) {
      const r = await this.get(k);
      if (r) out.push(r);
    }
    return out;
  }

  /** Runners that heart-beat within `lostAfterMs` of `now`. */
  async live(now: Date, lostAfterMs: number): Promise<RunnerRecord[]> {
    return (await this.list()).filter((r) => now.getTime() - new Date(r.heartbeatAt).getTime() <= lostAfterMs);
  }
}
