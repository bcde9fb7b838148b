/**
 * Errors that carry their HTTP meaning, for the server's own refusals (request
 * validation, limits, auth, deadlines). Sources throw SourceError with a code
 * instead (readers/errors.ts), which server/problem-types.ts maps to one of
 * these. The error handler turns both into RFC 9457 problem+json; anything else
 * that escapes is a bug and becomes a 500.
 */
export class Problem extends Error {
  readonly status: number;
  readonly title: string;
  readonly type: string;
  readonly extra: Record<string, unknown> | undefined;
  /** response headers the answer needs besides the body (Retry-After on a 429) */
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    title: string,
    detail: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
    type = problemTypeUri(title),
  ) {
    super(detail);
    this.name = 'Problem';
    this.status = status;
    this.title = title;
    this.type = type;
    this.extra = extra;
    this.headers = headers;
  }
}

/** A problem's type URI: its title's slug under nodetruth.dev/problems. */
export function problemTypeUri(title: string): string {
  return `https://nodetruth.dev/problems/${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
}

/** Retry-After in whole seconds (RFC 9110 10.2.3), at least 1. */
export const retryAfter = (seconds: number): Record<string, string> => ({ 'retry-after': String(Math.max(1, Math.ceil(seconds))) });

export const badRequest = (detail: string, extra?: Record<string, unknown>) =>
  new Problem(400, 'Invalid input', detail, extra);

/** A limit is full: 429 with Retry-After (RFC 9110 10.2.3), the seconds after which a slot is likely free. */
export const tooMany = (detail: string, retryAfterSeconds = 1) =>
  new Problem(429, 'Too many requests', detail, undefined, retryAfter(retryAfterSeconds));

export const unavailable = (detail: string) => new Problem(503, 'Source unavailable', detail);

/** The one item asked for exists but cannot be read (EISDIR, EACCES, ELOOP where a file should be): the reason, never a 500. */
export const unreadable = (detail: string) => new Problem(503, 'Source unreadable', detail);

/** No credential, or one the API server does not authenticate (RFC 9110 15.5.2; the caller sets WWW-Authenticate). */
export const unauthorized = (detail: string) => new Problem(401, 'Unauthorized', detail);

/** An authenticated caller without the permission the route needs. */
export const forbidden = (detail: string) => new Problem(403, 'Forbidden', detail);

/** A Host header that does not name this agent (RFC 9110 15.5.20). */
export const misdirected = (detail: string) => new Problem(421, 'Misdirected request', detail);

export const isProblem = (err: unknown): err is Problem => err instanceof Problem;
