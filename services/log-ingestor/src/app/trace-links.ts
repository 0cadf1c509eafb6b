/**
 * Carries a command's trace from the consumer that opened its cursor (the `TaskStarted` delivery)
 * to the worker that later reads it, in this process. A worker on another replica (or after a
 * restart) finds nothing and starts a new trace: traces are diagnostics, not state, so no column.
 */
export class TraceLinks {
  private readonly links = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  remember(commandId: string, traceparent: string | undefined): void {
    if (!traceparent) return;
    this.links.delete(commandId);
    this.links.set(commandId, traceparent);
    // Oldest first: a Map iterates in insertion order.
    while (this.links.size > this.max) this.links.delete(this.links.keys().next().value!);
  }

  /** The trace a command was opened in (kept: a retried read joins the same trace). */
  get(commandId: string): string | undefined {
    return this.links.get(commandId);
  }

  forget(commandId: string): void {
    this.links.delete(commandId);
  }
}
