/** Wakes every waiter on the next `notify()`; a waiter can also be released by an abort signal. */
export class Notifier {
  private waiters = new Set<() => void>();

  /** Resolves on the next notify, or at once/when `signal` aborts (the caller checks `signal.aborted`). */
  wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  notify(): void {
    for (const w of [...this.waiters]) w();
  }
}
