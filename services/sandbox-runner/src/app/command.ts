import { Notifier } from './notifier';
import type { CommandSpool } from './spool';
import type { CommandMeta, CommandState, CommandView, ExitInfo } from './types';

/**
 * One command this runner knows: its meta, how much output is on disk, and its exit record once
 * finalized. Readers wait on `changed()`; the process side calls `advance` and `finish`.
 */
export class Command {
  private readonly notifier = new Notifier();
  private writtenBytes: number;
  private writtenRecords: number;
  private exitInfo: ExitInfo | null;
  private stopReasonText: string | null = null;

  constructor(
    readonly meta: CommandMeta,
    readonly spool: CommandSpool,
    init: { written: number; records: number; exit: ExitInfo | null },
  ) {
    this.writtenBytes = init.written;
    this.writtenRecords = init.records;
    this.exitInfo = init.exit;
  }

  get id(): string {
    return this.meta.commandId;
  }

  /** Bytes on disk with their records: everything below is readable. */
  get written(): number {
    return this.writtenBytes;
  }

  get records(): number {
    return this.writtenRecords;
  }

  get exit(): ExitInfo | null {
    return this.exitInfo;
  }

  /** Why the runner is ending it ('stopped', 'killed', 'timeout', …), once it started to. */
  get stopReason(): string | null {
    return this.stopReasonText;
  }

  get state(): CommandState {
    if (this.exitInfo) return 'exited';
    return this.stopReasonText ? 'stopping' : 'running';
  }

  /** The first reason wins: a KILL after a STOP still reports 'stopped'. */
  markStopping(reason: string): void {
    this.stopReasonText ??= reason;
  }

  advance(written: number, records: number): void {
    this.writtenBytes = written;
    this.writtenRecords = records;
    this.notifier.notify();
  }

  finish(exit: ExitInfo): void {
    this.exitInfo = exit;
    this.notifier.notify();
  }

  /** Resolves on the next change (more output or the exit), or when `signal` aborts. */
  changed(signal?: AbortSignal): Promise<void> {
    return this.notifier.wait(signal);
  }

  view(): CommandView {
    const m = this.meta;
    return {
      commandId: m.commandId,
      taskId: m.taskId,
      conversationId: m.conversationId,
      generation: m.generation,
      state: this.state,
      startedAtMs: m.startedAtMs,
      outputBytes: this.exitInfo ? this.exitInfo.endOffset : this.writtenBytes,
      ackedOffset: m.ackedOffset,
      exit: this.exitInfo,
    };
  }
}
