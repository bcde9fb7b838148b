/**
 * Long synchronous loops over a node's items (3,000 cgroups read, the runtime's 3,000 containers
 * normalized) cut into slices bounded by time as well as count, resumed one slice per turn of the
 * event loop (issue 12: no stretch of work may hold the loop > 100 ms; ~50 ms is the aim at 3,000
 * containers, for slower machines).
 *
 * Why one slice per turn and not a plain `await setImmediate()`: every setImmediate queued before
 * a check phase runs in that phase, the timers and sockets waiting until all are done. Under load
 * several loops are at work at once (/v1/cgroups' and /metrics' cgroup reads, the /proc walk,
 * the runtime's lists): each yielding after its own 20 ms, three of them resumed in one phase and
 * held the loop 60 ms. Here the waiters form one queue and each turn of the loop resumes one, so
 * a turn holds at most one slice whatever the number of loops.
 */

/** Time one slice may run before it yields: ~1/6 of the aim, so a machine 5x slower stays under it. */
export const SLICE_MS = 8;

const waiting: (() => void)[] = [];
let queued = false;

function runOne(): void {
  queued = false;
  const next = waiting.shift();
  // queued now, during the check phase: runs in the next turn, after timers and I/O
  if (waiting.length > 0) schedule();
  next?.();
}

function schedule(): void {
  if (queued) return;
  queued = true;
  setImmediate(runOne);
}

/** Resolves in a later turn of the event loop than any other waiter resolved in this one. */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

/**
 * The clock of one sliced loop: `due()` before each item says when the slice is over (`maxItems`
 * items, or `maxMs` since it began: the clock is read every 4 items), then `pause()` yields.
 */
export class Slice {
  private since = performance.now();
  private n = 0;

  constructor(
    private readonly maxItems: number,
    private readonly maxMs = SLICE_MS,
    private readonly yielder: () => Promise<unknown> = nextTurn,
  ) {}

  /** counts the item about to run; true when it belongs to the next slice (pause first) */
  due(): boolean {
    const over = this.n >= this.maxItems || (this.n > 0 && this.n % 4 === 0 && performance.now() - this.since > this.maxMs);
    this.n++;
    return over;
  }

  async pause(): Promise<void> {
    await this.yielder();
    this.since = performance.now();
    this.n = 1; // the item due() counted opens the new slice
  }
}

/** `items.map(fn)` in slices (at most `maxItems` items or `maxMs` each); `pause` is what a yield is (tests count them). */
export async function mapSliced<T, R>(
  items: readonly T[],
  fn: (item: T, index: number) => R,
  o: { maxItems?: number; maxMs?: number; pause?: () => Promise<unknown> } = {},
): Promise<R[]> {
  const out = new Array<R>(items.length);
  const slice = new Slice(o.maxItems ?? 500, o.maxMs ?? SLICE_MS, o.pause ?? nextTurn);
  for (let i = 0; i < items.length; i++) {
    if (slice.due()) await slice.pause();
    out[i] = fn(items[i]!, i);
  }
  return out;
}
