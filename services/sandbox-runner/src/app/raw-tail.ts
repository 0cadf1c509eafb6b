import { watch, type FSWatcher } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { SpoolBudget } from './spool-budget';
import type { SpoolWriter } from './spool-writer';
import type { StreamName } from './types';

/**
 * Largest read from a raw file at a time. It also bounds how far apart stdout and stderr can be
 * interleaved when the runner lags behind (the two files carry no common clock), as a pipe's
 * buffer did before.
 */
const READ_BYTES = 128 * 1024;
/** Safety net next to inotify (a missed event would otherwise delay output until the next write). */
const POLL_MS = 1000;
const STREAMS: readonly StreamName[] = ['stdout', 'stderr'];

export type RawPositions = Record<StreamName, number>;

export interface RawTailEvents {
  /** The spool budget (RUNNER_SPOOL_MAX_BYTES) ran out: the tail stopped; `kept` bytes are in the spool. */
  onBudgetExhausted(kept: number): void;
}

/**
 * Copies what the command wrote into its raw files (`stdout.raw`, `stderr.raw`, written by the
 * command itself) into the spool (offsets and records), in the order this process sees it arrive.
 * The command never waits for the runner, and a runner restart resumes at the per-stream positions
 * the spool's records prove, so each byte lands in the spool exactly once.
 * Memory stays bounded: reads stop while the spool writer reports pressure.
 */
export class RawTail {
  private pumping: Promise<void> | null = null;
  private again = false;
  private paused = false;
  private halted = false;
  /** Set by finish/close: no new pump may start (two pumps would read the same bytes twice). */
  private closed = false;
  private readonly watchers: FSWatcher[] = [];
  private readonly poll: NodeJS.Timeout;

  private constructor(
    private readonly files: Record<StreamName, FileHandle>,
    paths: Record<StreamName, string>,
    private readonly pos: RawPositions,
    private readonly writer: SpoolWriter,
    private readonly budget: SpoolBudget,
    private readonly events: RawTailEvents,
  ) {
    for (const s of STREAMS) {
      try {
        this.watchers.push(watch(paths[s], { persistent: false }, () => this.kick()));
      } catch {
        /* the poll below still finds new bytes */
      }
    }
    this.poll = setInterval(() => this.kick(), POLL_MS);
    this.poll.unref();
    this.kick();
  }

  /** Opens both raw files (creating empty ones if a crash left none) and starts following them from `pos`. */
  static async start(paths: Record<StreamName, string>, pos: RawPositions, writer: SpoolWriter, budget: SpoolBudget, events: RawTailEvents): Promise<RawTail> {
    const out = await open(paths.stdout, 'a+', 0o600);
    const err = await open(paths.stderr, 'a+', 0o600).catch(async (e: Error) => {
      await out.close();
      throw e;
    });
    return new RawTail({ stdout: out, stderr: err }, paths, { ...pos }, writer, budget, events);
  }

  /** Positions consumed so far, per stream. */
  get positions(): RawPositions {
    return { ...this.pos };
  }

  /** Spool writer pressure: pause reading (the raw files simply grow meanwhile). */
  setPaused(paused: boolean): void {
    this.paused = paused;
    if (!paused) this.kick();
  }

  /** Once nothing can write any more (the sandbox is verified empty): copies the rest, then closes. */
  async finish(): Promise<void> {
    this.stopFollowing();
    while (this.pumping) await this.pumping;
    if (!this.halted) await this.pump(true);
    await Promise.allSettled(STREAMS.map((s) => this.files[s].close()));
  }

  private stopFollowing(): void {
    this.closed = true;
    clearInterval(this.poll);
    for (const w of this.watchers.splice(0)) w.close();
  }

  /** Stops without copying more (the runner is shutting down and leaves the command running). */
  async close(): Promise<void> {
    this.stopFollowing();
    this.halted = true;
    while (this.pumping) await this.pumping;
    await Promise.allSettled(STREAMS.map((s) => this.files[s].close()));
  }

  private kick(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = (async () => {
      do {
        this.again = false;
        await this.pump(false);
      } while (this.again && !this.halted);
    })().finally(() => (this.pumping = null));
  }

  private async pump(final: boolean): Promise<void> {
    for (;;) {
      if (this.halted || this.writer.error || (!final && this.paused)) return;
      let progressed = false;
      for (const s of STREAMS) if ((await this.readOnce(s)) > 0) progressed = true;
      if (!progressed) return;
      // The final copy does not wait for pressure events: it waits for the writer instead.
      if (final) await this.writer.drain();
    }
  }

  private async readOnce(stream: StreamName): Promise<number> {
    if (this.halted) return 0;
    const buf = Buffer.allocUnsafe(READ_BYTES);
    const { bytesRead } = await this.files[stream].read(buf, 0, READ_BYTES, this.pos[stream]);
    if (bytesRead === 0) return 0;
    // Small reads get their own buffer so a 64 KiB slab is not held for a few bytes.
    const data = bytesRead < READ_BYTES / 8 ? Buffer.from(buf.subarray(0, bytesRead)) : buf.subarray(0, bytesRead);
    const granted = this.budget.take(bytesRead);
    if (granted > 0) this.writer.append(stream, data.subarray(0, granted));
    this.pos[stream] += granted;
    if (granted < bytesRead) {
      this.halted = true;
      this.events.onBudgetExhausted(granted);
      return 0;
    }
    return bytesRead;
  }
}
