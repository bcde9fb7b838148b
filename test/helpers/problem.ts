import { isProblem } from '../../src/errors.js';

/** Assert that a promise rejects with a Problem of this status (and message pattern). */
export async function rejectsStatus(
  t: { ok: (v: unknown, m: string) => unknown },
  p: Promise<unknown> | (() => unknown),
  status: number,
  msg?: RegExp,
  name = `→ ${status}`,
): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p);
    t.ok(false, `${name}: resolved, expected ${status}`);
  } catch (err) {
    t.ok(isProblem(err) && err.status === status && (!msg || msg.test(err.message)), `${name} (${isProblem(err) ? `${err.status} ${err.message}` : String(err)})`);
  }
}
