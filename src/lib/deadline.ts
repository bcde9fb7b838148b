/**
 * "This source answered, or did not, and why": the one deadline helper and the
 * one outcome type every caller that waits on a source with a deadline uses
 * (readiness checks, the runtime's names for cgroups, node readiness, a scrape,
 * the triage snapshot, the guard for maybe-hung calls, the pattern workers).
 */

export type Outcome<T> =
  | { ok: true; value: T; ms: number }
  | {
      ok: false;
      /** true when the deadline passed before the source answered (its signal is aborted, the answer is not awaited) */
      timedOut: boolean;
      /** a sentence for the on-call engineer */
      error: string;
      /** the source's error itself (a SourceError with its code, most often); null on a timeout */
      cause: unknown;
      ms: number;
    };

/**
 * `work` within `ms`; never rejects. A late answer is dropped (and its rejection
 * swallowed): nobody waits for it once the deadline has passed. Work given as a
 * function gets a signal that aborts at the deadline, so a source that checks it
 * stops reading. `what` names the source in the timeout sentence ("runtime did
 * not answer within 500 ms").
 */
export async function withinDeadline<T>(work: Promise<T> | ((signal: AbortSignal) => Promise<T>), ms: number, what: string): Promise<Outcome<T>> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  const ac = new AbortController();
  let p: Promise<T>;
  try {
    p = typeof work === 'function' ? work(ac.signal) : work;
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
    if (r === 'late') {
      ac.abort();
      return { ok: false, timedOut: true, error: `${what} did not answer within ${Math.max(0, Math.round(ms))} ms`, cause: null, ms: elapsed() };
    }
    return { ok: true, value: r.value, ms: elapsed() };
  } catch (err) {
    return { ok: false, timedOut: false, error: errorText(err), cause: err, ms: elapsed() };
  } finally {
    clearTimeout(timer);
  }
}

const ERROR_MAX = 2000;

/** Anything may be thrown (null, a string, an object whose message or toString throws): describing it must not throw, nor carry a megabyte. */
function errorText(err: unknown): string {
  let text: string;
  try {
    const m = (err as { message?: unknown } | null)?.message;
    text = typeof m === 'string' && m !== '' ? m : String(err);
  } catch {
    text = 'an error that cannot be described';
  }
  return text.length > ERROR_MAX ? `${text.slice(0, ERROR_MAX)}…` : text;
}
