/** Whether a process the test started (or saw started) still exists: signal 0 probes, sends nothing. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Polls `cond` until it holds or `ms` pass; the last answer is the result (a bound, not a timing assertion). */
export async function waitFor(cond: () => boolean, ms = 20_000, everyMs = 20): Promise<boolean> {
  const until = Date.now() + ms;
  while (!cond() && Date.now() < until) await new Promise((r) => setTimeout(r, everyMs));
  return cond();
}
