import type { Pool } from 'pg';
import type { Clock } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import type { EventStore, Logger, Nats, RunnerClients, RunnerRegistry } from '@handplane/platform';
import type { IngestStats } from './ingest-stats';
import type { TraceLinks } from './trace-links';

/** Tunables of the ingestor; defaults in `service.ts`. */
export interface IngestorSettings {
  /** This instance's name in `ingest_cursors.owner`. */
  readonly instanceId: string;
  /** How long a claim holds a command without renewal. */
  readonly leaseMs: number;
  readonly claimIntervalMs: number;
  /** Commands read at once by this instance. */
  readonly maxActive: number;
  /** A batch is committed at this many bytes … */
  readonly flushBytes: number;
  /** … or this long after its first byte, or on the exit record. */
  readonly flushMs: number;
  /** Largest `command_log` row and LOGS chunk (contiguous bytes of one stream are merged up to it; below the NATS payload limit). */
  readonly maxRowBytes: number;
  /** The ReadLog stream is paused while this many bytes wait in memory (grpc flow control then slows the runner). */
  readonly queueHighWaterBytes: number;
  /** OUTPUT_CAP_BYTES: the first half and the last half of a command's output are kept; 0 keeps everything. */
  readonly outputCapBytes: number;
  /** Largest text of one `command.output` event, in UTF-8 bytes. */
  readonly maxTextBytes: number;
  /** PROMPT_QUIET_MS: a prompt-like end of output followed by this much quiet is `task.awaiting_input` (0 or absent = off). */
  readonly promptQuietMs?: number;
  /** A runner silent (or absent from the registry) this long is lost. */
  readonly runnerLostAfterMs: number;
  /** Test seams that make a crash happen at a chosen point. */
  readonly faults?: IngestorFaults;
}

/** Points where a test can make the ingestor fail, as a crash there would. */
export interface IngestorFaults {
  /** After `CommandExited` is appended, before `CommandResultReadable`. */
  afterExitRecorded?(commandId: string): Promise<void> | void;
}

/** The resources every application function of the ingestor receives. */
export interface IngestorDeps {
  readonly pool: Pool;
  readonly nats: Nats;
  readonly store: EventStore;
  readonly topology: Topology;
  readonly registry: RunnerRegistry;
  readonly clients: RunnerClients;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: IngestorSettings;
  readonly stats: IngestStats;
  /** The trace each command was started in, for the worker that reads it (absent: no tracing). */
  readonly traces?: TraceLinks;
}

/** The metadata of everything the ingestor writes. */
export function systemMetadata(clock: Clock): { at: string; actor: string } {
  return { at: clock.now().toISOString(), actor: 'system:log-ingestor' };
}
