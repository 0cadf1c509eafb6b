import type { ReceiptEvidence, ReceiptStop, TaskReceipt, TerminalTaskStatus } from './task.events';

/** The facts the receipt is derived from (gathered by the decider at TaskFinished). */
export interface ReceiptInput {
  readonly status: TerminalTaskStatus;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly exitReason: string | null;
  readonly ran: boolean;
  readonly stop: ReceiptStop | null;
  readonly evidence: Omit<ReceiptEvidence, 'exitReason'>;
}

const SIGNALLED_REASONS: ReadonlySet<string> = new Set(['stopped', 'killed', 'timeout']);

function whose(stop: ReceiptStop): string {
  switch (stop.reason) {
    case 'user':
      return `at the request of user ${stop.by}`;
    case 'deadline':
      return 'at the request of the deadline';
    case 'stop_all':
      return `at the request of stop-all by ${stop.by}`;
    case 'policy':
      return `by policy${stop.detail ? ` (${stop.detail})` : ''}`;
  }
}

function outcomeOf(i: ReceiptInput, reason: string): TaskReceipt['outcome'] {
  if (!i.ran) return 'not_started';
  if (i.signal !== null || SIGNALLED_REASONS.has(reason)) return 'killed';
  if (i.exitCode !== null) return 'exited';
  if (i.status === 'lost' || reason.startsWith('lost')) return 'lost';
  return 'unknown';
}

function summaryOf(outcome: TaskReceipt['outcome'], i: ReceiptInput, reason: string, stop: ReceiptStop | null): string {
  switch (outcome) {
    case 'exited':
      return `exited with code ${i.exitCode}${i.stop ? ` (a stop ${whose(i.stop)} was pending)` : ''}`;
    case 'killed': {
      const how = i.signal ? `killed by ${i.signal}` : `killed (${i.exitCode !== null ? `exit code ${i.exitCode}` : 'no signal reported'})`;
      if (stop) return `${how} ${whose(stop)}`;
      if (reason === 'timeout') return `${how} by the runner's wall-time limit`;
      return `${how}; nobody in Handplane asked for it`;
    }
    case 'lost':
      return `lost with its host ${i.evidence.runnerId ?? '(unknown runner)'}${reason ? ` (${reason})` : ''}`;
    case 'not_started':
      return i.stop ? `never started: stopped ${whose(i.stop)} before any runner took it` : `never started${i.evidence.startFailure ? `: ${i.evidence.startFailure}` : ''}`;
    case 'unknown':
      return 'ended without an exit code, signal or loss on record (unknown)';
  }
}

/** Derives the receipt (pure). */
export function receiptFor(i: ReceiptInput): TaskReceipt {
  const reason = i.exitReason ?? '';
  const outcome = outcomeOf(i, reason);
  // The runner's own wall-time backstop is the deadline's doing even when no stop was recorded.
  const stop = outcome === 'killed' && !i.stop && reason === 'timeout' ? null : i.stop;
  return {
    outcome,
    status: i.status,
    exitCode: i.exitCode,
    signal: i.signal,
    requestedBy: outcome === 'killed' || outcome === 'not_started' ? stop : null,
    summary: summaryOf(outcome, i, reason, stop),
    evidence: { ...i.evidence, exitReason: i.exitReason },
  };
}
