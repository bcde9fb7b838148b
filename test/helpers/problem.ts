import { isProblem, problemOf } from '../../src/errors.js';
import { isSourceError, type SourceErrorCode } from '../../src/readers/errors.js';

/** The HTTP status an error answers with: a Problem's own, a SourceError's through the Problem it answers as. */
const statusOfError = (err: unknown): number | null => (isProblem(err) ? err.status : isSourceError(err) ? problemOf(err).status : null);

const describe = (err: unknown): string =>
  isSourceError(err) ? `${err.code} → ${problemOf(err).status} ${err.message}` : isProblem(err) ? `${err.status} ${err.message}` : String(err);

async function rejection(p: Promise<unknown> | (() => unknown)): Promise<{ err: unknown } | null> {
  try {
    await (typeof p === 'function' ? p() : p);
    return null;
  } catch (err) {
    return { err };
  }
}

/** Assert that a promise rejects with a Problem or SourceError answering this status (and message pattern). */
export async function rejectsStatus(
  t: { ok: (v: unknown, m: string) => unknown },
  p: Promise<unknown> | (() => unknown),
  status: number,
  msg?: RegExp,
  name = `→ ${status}`,
): Promise<void> {
  const r = await rejection(p);
  if (!r) return void t.ok(false, `${name}: resolved, expected ${status}`);
  t.ok(statusOfError(r.err) === status && (!msg || msg.test((r.err as Error).message)), `${name} (${describe(r.err)})`);
}

/** Assert that a promise rejects with a SourceError of this code (and message pattern). */
export async function rejectsCode(
  t: { ok: (v: unknown, m: string) => unknown },
  p: Promise<unknown> | (() => unknown),
  code: SourceErrorCode,
  msg?: RegExp,
  name = `→ ${code}`,
): Promise<void> {
  const r = await rejection(p);
  if (!r) return void t.ok(false, `${name}: resolved, expected ${code}`);
  t.ok(isSourceError(r.err, code) && (!msg || msg.test(r.err.message)), `${name} (${describe(r.err)})`);
}
