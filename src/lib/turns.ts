/**
 * Long synchronous loops over a node's items (the runtime's 3,000 containers normalized, the
 * /proc walk, the slices' clock of the cgroup reads) cut into slices bounded by time as well as count, resumed from one queue with a
 * time budget per turn of the event loop (no stretch of work may hold the loop > 100 ms; ~50 ms is the aim at 3,000
 * containers, for slower machines).
 *
 * Why a queue and not a plain `await setImmediate()`: every setImmediate queued before
 * a check phase runs in that phase, the timers and sockets waiting until all are done. Under load
 * several loops are at work at once (the /proc walk, the runtime's lists and rows, the cgroup
 * reads): each yielding after its own 20 ms, three of them resumed in one phase hold the loop
 * 60 ms. (The cgroup reads keep a plain 20 ms yield: see READ_SLICE_MS in readers/cgroup/cgroups.ts.) Here the waiters form one queue, and a turn of the loop resumes them in
 * order for at most TURN_MS (plus the last one's slice), whatever the number of loops.
 */

/** Time one slice may run before it yields: ~1/6 of the aim, so a machine 5x slower stays under it. */
export const SLICE_MS = 8;

/**
 * Slices of gated work one turn of the loop may run, in time: waiters resumed in the same check
 * phase while less than this has passed since its first (the last may run a whole slice past it).
 * Without it the loops pay for the rest of a turn's work once per slice each, and fall behind
 * the work that yields with a plain setImmediate (the /v1/cgroups reads wait past the load
 * shedder's 5 s at 1,000 containers).
 */
const TURN_MS = 2 * SLICE_MS;

/**
 * The waiters of sliced loops, resumed in order: a turn of the event loop resumes the first, then
 * the next ones whose turn comes while the turn's budget lasts, then the rest wait for the next turn.
 */
export class TurnQueue {
  private readonly waiting: (() => void)[] = [];
  private queued = false;
  /** from `run` to `endPhase`: the two are queued together, so nothing else runs between them but their microtasks */
  private inPhase = false;
  private phaseStart = 0;

  constructor(private readonly budgetMs = TURN_MS) {}

  /** Resolves in a later turn of the event loop, or in this one while its budget lasts. */
  readonly next = (): Promise<void> =>
    new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (this.inPhase && performance.now() - this.phaseStart < this.budgetMs) this.waiting.shift()!();
      else this.schedule();
    });

  private schedule(): void {
    if (this.queued) return;
    this.queued = true;
    // queued during a check phase these run in the next turn, after timers and I/O
    setImmediate(this.run);
    setImmediate(this.endPhase);
  }

  private readonly run = (): void => {
    this.queued = false;
    this.inPhase = true;
    this.phaseStart = performance.now();
    this.waiting.shift()?.();
  };

  private readonly endPhase = (): void => {
    this.inPhase = false;
    if (this.waiting.length > 0) this.schedule();
  };
}

const turns = new TurnQueue();

/**
 * The one way to yield to the event loop. `'queued'` (the default): in the one queue of sliced
 * loops, resumed in a later turn, or in this one while the turn's budget lasts. `'plain'`: a plain
 * setImmediate, resumed in the next check phase with every other immediate, whatever ran there;
 * for work that must not wait behind the queue (the cgroup reads: READ_SLICE_MS in
 * readers/cgroup/cgroups.ts says why, with the measurement).
 */
export function nextTurn(how: 'queued' | 'plain' = 'queued'): Promise<void> {
  return how === 'plain' ? new Promise<void>((resolve) => setImmediate(resolve)) : turns.next();
}

/**
 * The clock of one sliced loop: `due()` before each item says when the slice is over (`maxItems`
 * items, or `maxMs` since it began: the clock is read every 4 items), then `pause()` yields.
 * `workedMs`: the time spent in the slices up to the last pause, the waits between them not counted.
 */
export class Slice {
  private since = performance.now();
  private n = 0;
  workedMs = 0;

  constructor(
    private readonly maxItems: number,
    private readonly maxMs = SLICE_MS,
    private readonly yielder: () => Promise<unknown> = () => nextTurn(),
  ) {}

  /** counts the item about to run; true when it belongs to the next slice (pause first) */
  due(): boolean {
    const over = this.n >= this.maxItems || (this.n > 0 && this.n % 4 === 0 && performance.now() - this.since > this.maxMs);
    this.n++;
    return over;
  }

  async pause(): Promise<void> {
    this.workedMs += performance.now() - this.since;
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
  const slice = new Slice(o.maxItems ?? 500, o.maxMs ?? SLICE_MS, o.pause);
  for (let i = 0; i < items.length; i++) {
    if (slice.due()) await slice.pause();
    out[i] = fn(items[i]!, i);
  }
  return out;
}
