/**
 * A fixed number of slots for work that holds one of libuv's four pool threads
 * while it runs (a statfs of a mount that may hang, a /proc cmdline read behind a
 * locked memory map): at most `max` at once. A waiter gives up at its deadline or
 * when its signal aborts; a slot is held until the work itself returns, even long
 * past its caller's deadline, so hung calls can never take every thread.
 */
export class Slots {
  /** slots held, including by work past its caller's deadline */
  busy = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly max: number) {}

  /** A slot by `until` (ms since the epoch): false when none came free by then or `signal` aborted. The holder calls release(). */
  acquire(until: number, signal?: AbortSignal): Promise<boolean> {
    if (this.busy < this.max) {
      this.busy++;
      return Promise.resolve(true);
    }
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const stopWaiting = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
      };
      const grant = () => {
        stopWaiting();
        this.busy++;
        resolve(true);
      };
      const giveUp = () => {
        stopWaiting();
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      };
      const timer = setTimeout(giveUp, Math.max(1, until - Date.now()));
      signal?.addEventListener('abort', giveUp, { once: true });
      this.waiters.push(grant);
    });
  }

  /** Free a slot: the longest waiter gets it. */
  release(): void {
    this.busy--;
    this.waiters.shift()?.();
  }
}
