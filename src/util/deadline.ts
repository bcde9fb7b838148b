/**
 * "This source answered, or did not, and why": the one deadline helper and the
 * one outcome type every caller that waits on a source with a deadline uses
 * (readiness checks, the runtime's names for cgroups, node readiness, a scrape).
 */

export type Outcome<T> =
  | { ok: true; value: T; ms: number }
  | {
      ok: false;
      /** true when the deadline passed before the source answered (the work is abandoned, not cancelled) */
      timedOut: boolean;
      /** a sentence for the on-call engineer */
      error: string;
      /** the source's error itself (a SourceError with its code, most often); null on a timeout */
      cause: unknown;
      ms: number;
    };

/**
 * `work` within `ms`; never rejects. A late answer is dropped (and its rejection
 * swallowed): nobody waits for it once the deadline has passed. `what` names the
 * source in the timeout sentence ("runtime did not answer within 500 ms").
 */
export async function withinDeadline<T>(work: Promise<T> | (() => Promise<T>), ms: number, what: string): Promise<Outcome<T>> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  let p: Promise<T>;
  try {
    p = typeof work === 'function' ? work() : work;
  } catch (err) {
    return { ok: false, timedOut: false, error: errorText(err), cause: err, ms: 0 };
  }
  p.catch(() => {}); // may settle after the deadline
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    // a caller's remaining budget can be spent already (a deadline shared by steps): then it is late at once
    timer = setTimeout(() => resolve('late'), Math.max(0, ms));
  });
  try {
    const r = await Promise.race([p.then((value) => ({ value })), late]);
    if (r === 'late') return { ok: false, timedOut: true, error: `${what} did not answer within ${Math.max(0, Math.round(ms))} ms`, cause: null, ms: elapsed() };
    return { ok: true, value: r.value, ms: elapsed() };
  } catch (err) {
    return { ok: false, timedOut: false, error: errorText(err), cause: err, ms: elapsed() };
  } finally {
    clearTimeout(timer);
  }
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
