/**
 * Errors that carry their HTTP meaning. Sources throw these (they know nothing
 * of HTTP beyond a status number), the error handler turns them into RFC 9457
 * problem+json. Anything else that escapes is a bug and becomes a 500.
 */
export class Problem extends Error {
  readonly status: number;
  readonly title: string;
  readonly type: string;
  readonly extra: Record<string, unknown> | undefined;

  constructor(status: number, title: string, detail: string, extra?: Record<string, unknown>) {
    super(detail);
    this.name = 'Problem';
    this.status = status;
    this.title = title;
    this.type = `https://nodetruth.dev/problems/${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
    this.extra = extra;
  }
}

export const badRequest = (detail: string, extra?: Record<string, unknown>) =>
  new Problem(400, 'Invalid input', detail, extra);

export const notFound = (detail: string) => new Problem(404, 'Not found', detail);

export const ambiguous = (detail: string, candidates: string[]) =>
  new Problem(409, 'Ambiguous id prefix', detail, { candidates });

export const tooMany = (detail: string) => new Problem(429, 'Too many requests', detail);

export const notImplemented = (detail: string) => new Problem(501, 'Not implemented', detail);

export const unavailable = (detail: string) => new Problem(503, 'Source unavailable', detail);

export const timedOut = (detail: string) => new Problem(504, 'Source timed out', detail);

export const isProblem = (err: unknown): err is Problem => err instanceof Problem;
