import { Problem, problemTypeUri, retryAfter } from '../errors.js';
import { SOURCE_ERROR_CODES, type SourceError, type SourceErrorCode } from '../readers/errors.js';

export interface ProblemType {
  status: number;
  title: string;
  /** RFC 9457 type URI; the title's slug, for every problem of ours */
  type: string;
  /** what the code means, for the OpenAPI description */
  means: string;
}

const row = (status: number, title: string, means: string): ProblemType => ({ status, title, type: problemTypeUri(title), means });

/**
 * The one table from a source's error code to its HTTP answer. Several codes
 * share a status and title (clients that read only those keep working); the
 * body's `code` tells them apart.
 */
export const PROBLEM_TYPES: Record<SourceErrorCode, ProblemType> = {
  bad_parameter: row(400, 'Invalid input', 'a request value was refused; `param` names it'),
  path_outside_root: row(400, 'Invalid input', 'the path leads outside the host root or the directory it must stay in'),
  path_not_regular: row(400, 'Invalid input', 'the path names something other than a regular file'),
  path_link_loop: row(400, 'Invalid input', 'the path has too many links, or one was swapped in while it was opened'),
  not_found: row(404, 'Not found', 'no such object (id, file, boot, process)'),
  ambiguous_id: row(409, 'Ambiguous id prefix', 'the id prefix matches several objects; `candidates` lists some'),
  busy: row(429, 'Too many requests', 'a limit is full; Retry-After says when to try again'),
  cgroup_mode_unsupported: row(501, 'Not implemented', 'the host runs cgroup v1 or a hybrid hierarchy; nodetruth reads cgroup v2 only'),
  runtime_unimplemented: row(501, 'Not implemented', 'the container runtime does not implement the CRI call'),
  source_unsupported: row(501, 'Not implemented', 'the tool a source runs lacks the feature asked for'),
  runtime_error: row(502, 'Runtime error', 'the container runtime answered with an error'),
  api_server_error: row(502, 'Kubernetes API error', 'the Kubernetes API server answered with an error'),
  runtime_unconfigured: row(503, 'Source unavailable', 'no CRI socket was configured or found'),
  runtime_unreachable: row(503, 'Source unavailable', 'nothing answers on the CRI socket'),
  source_unavailable: row(503, 'Source unavailable', 'a source cannot be used (journalctl missing, the kernel log cannot be opened)'),
  api_server_unreachable: row(503, 'Source unavailable', 'the Kubernetes API server cannot be reached'),
  no_cluster_access: row(503, 'Source unavailable', "the Kubernetes API server refused nodetruth's credentials"),
  source_unreadable: row(503, 'Source unreadable', 'the one item asked for exists but cannot be read'),
  runtime_timeout: row(504, 'Source timed out', 'the container runtime did not answer within --cri-timeout'),
  api_server_timeout: row(504, 'Source timed out', 'the Kubernetes API server did not answer in time'),
  source_timeout: row(504, 'Source timed out', 'a source did not answer within its deadline'),
};

/** A SourceError as the problem+json answer the table gives it. */
export function problemOf(err: SourceError): Problem {
  const t = PROBLEM_TYPES[err.code];
  const extra: Record<string, unknown> = { code: err.code };
  if (err.param !== undefined) extra.param = err.param;
  if (err.reason !== undefined) extra.reason = err.reason;
  if (err.candidates !== undefined) extra.candidates = err.candidates;
  const headers = t.status === 429 ? retryAfter(err.retryAfterSeconds ?? 1) : undefined;
  return new Problem(t.status, t.title, err.message, extra, headers, t.type);
}

/** The HTTP status a source error answers with. */
export const statusOf = (err: SourceError): number => PROBLEM_TYPES[err.code].status;

/** For the OpenAPI description: every code with its status and meaning. */
export const problemCodesDescription = (): string =>
  SOURCE_ERROR_CODES.map((c) => `- \`${c}\` (${PROBLEM_TYPES[c].status} ${PROBLEM_TYPES[c].title}): ${PROBLEM_TYPES[c].means}`).join('\n');
