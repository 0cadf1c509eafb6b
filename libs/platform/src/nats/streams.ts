import { DiscardPolicy, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { Topology } from '@handplane/contracts';

const MINUTE_NS = 60 * 1_000_000_000;

/** Desired configuration of the four streams (DESIGN.md §2). */
export function streamConfigs(t: Topology, replicas = 1): (Partial<StreamConfig> & { name: string })[] {
  const base = {
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: Math.max(1, replicas),
    duplicate_window: 10 * MINUTE_NS,
    max_msg_size: 1024 * 1024,
    allow_direct: true,
  };
  return [
    { ...base, name: t.streams.TASKS, subjects: t.streamSubjects.TASKS },
    { ...base, name: t.streams.LOGS, subjects: t.streamSubjects.LOGS },
    { ...base, name: t.streams.CANCELS, subjects: t.streamSubjects.CANCELS, max_age: 7 * 24 * 60 * MINUTE_NS },
    { ...base, name: t.streams.CONV, subjects: t.streamSubjects.CONV },
  ];
}

/** Creates the streams, or updates them to the desired config; safe to call from every service at start. */
export async function ensureStreams(jsm: JetStreamManager, t: Topology, replicas = 1): Promise<void> {
  for (const cfg of streamConfigs(t, replicas)) {
    const name = cfg.name as string;
    const existing = await jsm.streams.info(name).catch(() => null);
    if (!existing) {
      try {
        await jsm.streams.add(cfg);
      } catch (e) {
        // Another service created it between our look and our add.
        if (!(await jsm.streams.info(name).catch(() => null))) throw e;
      }
    } else {
      const { storage: _s, num_replicas: _r, ...updatable } = cfg;
      void _s;
      void _r;
      await jsm.streams.update(name, { ...existing.config, ...updatable });
    }
  }
}

/** Deletes a topology's streams (tests clean up after themselves). */
export async function deleteStreams(jsm: JetStreamManager, t: Topology): Promise<void> {
  for (const name of Object.values(t.streams)) await jsm.streams.delete(name).catch(() => undefined);
}
