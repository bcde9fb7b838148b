import type { SourceError, SourceErrorCode } from './readers/errors.js';

/**
 * The one table of every error answer: a code → its HTTP status, title, RFC 9457
 * type and a sentence for the on-call engineer. Sources raise SourceError with a
 * code (readers/errors.ts); the server raises Problem with one of its own. Several
 * codes share a status and title (clients that read only those keep working); the
 * body's `code` tells them apart. The error handler (server/plugins/problems.ts)
 * turns both into application/problem+json; anything else is a bug and a 500.
 */
interface ErrorType {
  status: number;
  title: string;
  /** RFC 9457 type URI: the title's slug under nodetruth.dev/problems */
  type: string;
  /** what the code means, for the OpenAPI description and docs/api.md */
  means: string;
  /** the answer carries Retry-After: the seconds after which a slot is likely free */
  retryAfter: boolean;
}

const row = (status: number, title: string, means: string, retryAfter = false): ErrorType => ({
  status,
  title,
  type: `https://nodetruth.dev/problems/${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
  means,
  retryAfter,
});

/** Every code, the sources' (readers/errors.ts) and the server's own refusals (request, limits, auth, deadlines, bundles), by status. */
const ROWS = {
  bad_parameter: row(400, 'Invalid input', 'a request value was refused; `param` names it (`errors` lists every reason)'),
  path_outside_root: row(400, 'Invalid input', 'the path leads outside the host root or the directory it must stay in'),
  path_not_regular: row(400, 'Invalid input', 'the path names something other than a regular file'),
  path_link_loop: row(400, 'Invalid input', 'the path has too many links, or one was swapped in while it was opened'),
  malformed_request: row(400, 'Bad request', 'the request is not valid HTTP/1.1, or its URL or body was refused before any route saw it'),
  unauthorized: row(401, 'Unauthorized', 'no bearer token, or one the TokenReview did not accept (`--auth kubernetes`); WWW-Authenticate says which'),
  session_required: row(401, 'Unauthorized', 'an `attach` pod answers its own session only: the x-nodetruth-session header is missing or wrong'),
  forbidden: row(403, 'Forbidden', 'the caller may not `get` the `--auth-resource` of this node (SubjectAccessReview)'),
  not_found: row(404, 'Not found', 'no such object (id, file, boot, process)'),
  no_route: row(404, 'Not found', 'no route with this method and path; /openapi.json lists them'),
  request_header_timeout: row(408, 'Request timeout', 'the request did not arrive within 15 s'),
  ambiguous_id: row(409, 'Ambiguous id prefix', 'the id prefix matches several objects; `candidates` lists some'),
  bundle_not_live: row(409, 'Bundle is not the live node', 'served from a bundle: a follow stream, a new throttling window or parameters that were not captured need the live agent'),
  content_too_large: row(413, 'Content too large', 'the request has a body larger than the agent reads (its routes take none)'),
  uri_too_long: row(414, 'URI too long', 'a path parameter is longer than the router reads'),
  unsupported_media_type: row(415, 'Unsupported media type', 'the request has a body of a type the agent does not read (its routes take none)'),
  misdirected: row(421, 'Misdirected request', 'a Host header that does not name this agent (loopback without `--auth`; `--allowed-hosts`), against DNS rebinding'),
  busy: row(429, 'Too many requests', 'a limit is full; Retry-After says when to try again', true),
  too_many_follows: row(429, 'Too many requests', '`--max-follows` streams are open, or `--max-follows-per-client` for this client; one must end first', true),
  capture_running: row(429, 'Too many requests', 'a capture (/v1/bundle) is already running; one at a time', true),
  too_many_reviews: row(429, 'Too many requests', 'too many new bearer tokens to review, from this address or from all callers; Retry-After says when', true),
  client_unread_limit: row(429, 'Too many requests', 'this client holds too many bytes of answers it has not read; read them first', true),
  headers_too_large: row(431, 'Request header fields too large', 'the request headers exceed 16 KiB'),
  client_closed: row(499, 'Client closed request', 'the client went away before the answer (audit log only: nobody reads it)'),
  internal_error: row(500, 'Internal error', 'a bug in nodetruth; the agent log has the stack'),
  cgroup_mode_unsupported: row(501, 'Not implemented', 'the host runs cgroup v1 or a hybrid hierarchy; nodetruth reads cgroup v2 only'),
  runtime_unimplemented: row(501, 'Not implemented', 'the container runtime does not implement the CRI call'),
  source_unsupported: row(501, 'Not implemented', 'the tool a source runs lacks the feature asked for'),
  runtime_error: row(502, 'Runtime error', 'the container runtime answered with an error'),
  api_server_error: row(502, 'Kubernetes API error', 'the Kubernetes API server answered with an error'),
  bundle_answer_refused: row(502, 'Bundle answer refused', "served from a bundle: the bundle's stored answer for this request failed its checks"),
  runtime_unconfigured: row(503, 'Source unavailable', 'no CRI socket was configured or found'),
  runtime_unreachable: row(503, 'Source unavailable', 'nothing answers on the CRI socket'),
  source_unavailable: row(503, 'Source unavailable', 'a source cannot be used (journalctl missing, the kernel log cannot be opened)'),
  api_server_unreachable: row(503, 'Source unavailable', 'the Kubernetes API server cannot be reached'),
  no_cluster_access: row(503, 'Source unavailable', "the Kubernetes API server refused nodetruth's credentials"),
  no_cluster_credentials: row(503, 'Source unavailable', 'nodetruth has no usable cluster credentials (no kubeconfig, no service account token, or they do not load)'),
  needs_runtime: row(503, 'Source unavailable', "the filter needs the runtime's pod names and the runtime did not answer"),
  source_unreadable: row(503, 'Source unreadable', 'the one item asked for exists but cannot be read'),
  overloaded: row(503, 'Overloaded', 'unread answers of all clients past the agent\'s bound, or full-node answers being built and waiting past their slots', true),
  shutting_down: row(503, 'Shutting down', 'the agent is stopping and the request did not finish within the grace'),
  runtime_timeout: row(504, 'Source timed out', 'the container runtime did not answer within `--cri-timeout`'),
  api_server_timeout: row(504, 'Source timed out', 'the Kubernetes API server did not answer in time'),
  source_timeout: row(504, 'Source timed out', 'a source did not answer within its deadline'),
  request_timeout: row(504, 'Request timed out', 'no answer within `--request-timeout`; the work was cancelled'),
};
export type ErrorCode = keyof typeof ROWS;
/** a source code without its row fails to compile here */
const everySourceCode: [Exclude<SourceErrorCode, ErrorCode>] extends [never] ? true : never = true;
export const ERROR_TYPES: Readonly<Record<ErrorCode, ErrorType>> = everySourceCode && ROWS;

/** Every code, in the table's order (by status). */
export const ERROR_CODES = Object.keys(ERROR_TYPES) as ErrorCode[];

/** An error answer: made from a code only; status, title and type come from its row. */
export class Problem extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly type: string;
  /** fields of the body besides the standard ones and `code` (param, candidates, ...) */
  readonly extra: Record<string, unknown> | undefined;
  /** Retry-After in whole seconds (RFC 9110 10.2.3), at least 1, on the codes that carry it */
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, detail: string, extra?: Record<string, unknown>, retryAfterSeconds = 1) {
    super(detail);
    const t = ERROR_TYPES[code];
    this.name = 'Problem';
    this.code = code;
    this.status = t.status;
    this.title = t.title;
    this.type = t.type;
    this.extra = extra;
    this.headers = t.retryAfter ? { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) } : undefined;
  }
}

export const isProblem = (err: unknown): err is Problem => err instanceof Problem;

/** A SourceError as the Problem its code answers with. */
export function problemOf(err: SourceError): Problem {
  const extra: Record<string, unknown> = {};
  if (err.param !== undefined) extra.param = err.param;
  if (err.reason !== undefined) extra.reason = err.reason;
  if (err.candidates !== undefined) extra.candidates = err.candidates;
  return new Problem(err.code, err.message, extra, err.retryAfterSeconds);
}

/** For the OpenAPI description: every code with its status and meaning. */
export const problemCodesDescription = (): string =>
  ERROR_CODES.map((c) => `- \`${c}\` (${ERROR_TYPES[c].status} ${ERROR_TYPES[c].title}): ${ERROR_TYPES[c].means}`).join('\n');

