import type { HostPathCode } from './hostfs/hostfs.js';

/**
 * What a source says when it cannot answer: a stable code and a sentence for
 * the on-call engineer. Sources know nothing of HTTP; src/errors.ts
 * maps each code to a status, a title and a problem type, and triage decides
 * between findings by the code. Adding a code means adding its row there (the
 * compiler insists).
 */
export const SOURCE_ERROR_CODES = [
  /** a request value a source refuses; `param` names it */
  'bad_parameter',
  /** a host path that leads outside the host root or the subtree it must stay in */
  'path_outside_root',
  /** a host path naming something other than a regular file (a device, a FIFO, a directory) */
  'path_not_regular',
  /** a host path with too many links, or a link swapped in while it was opened */
  'path_link_loop',
  'not_found',
  /** an id prefix matching several objects; `candidates` lists some */
  'ambiguous_id',
  /** a limit is full; `retryAfterSeconds` says when a slot is likely free */
  'busy',
  /** cgroup v1 or a hybrid hierarchy: nodetruth reads cgroup v2 only */
  'cgroup_mode_unsupported',
  /** the runtime answered UNIMPLEMENTED */
  'runtime_unimplemented',
  /** the tool a source runs lacks a feature the request needs (journalctl without PCRE2) */
  'source_unsupported',
  /** the runtime answered with an error of its own */
  'runtime_error',
  /** no CRI socket configured and none found under the host root */
  'runtime_unconfigured',
  /** nothing answers on the CRI socket */
  'runtime_unreachable',
  /** the runtime accepted the call and did not answer within its deadline */
  'runtime_timeout',
  /** a source that cannot be used at all (no journalctl, /dev/kmsg cannot be opened) */
  'source_unavailable',
  /** the one item asked for exists but cannot be read (EISDIR, EACCES, ELOOP) */
  'source_unreadable',
  /** a source did not answer within the deadline its caller gave it */
  'source_timeout',
  'api_server_error',
  'api_server_unreachable',
  'api_server_timeout',
  /** the API server refused nodetruth's own credentials (401/403) */
  'no_cluster_access',
] as const;
export type SourceErrorCode = (typeof SOURCE_ERROR_CODES)[number];

interface SourceErrorOptions {
  param?: string;
  candidates?: string[];
  retryAfterSeconds?: number;
  /** the host path refusal's errno-style code (EXDEV, EFTYPE, ELOOP), when one caused it */
  reason?: string;
}

export class SourceError extends Error {
  readonly code: SourceErrorCode;
  readonly param: string | undefined;
  readonly candidates: string[] | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly reason: string | undefined;

  constructor(code: SourceErrorCode, detail: string, opts: SourceErrorOptions = {}) {
    super(detail);
    this.name = 'SourceError';
    this.code = code;
    this.param = opts.param;
    this.candidates = opts.candidates;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.reason = opts.reason;
  }
}

/** Is err a SourceError (of one of these codes, when given)? */
export const isSourceError = (err: unknown, ...codes: SourceErrorCode[]): err is SourceError =>
  err instanceof SourceError && (codes.length === 0 || codes.includes(err.code));

/** The runtime as a whole is down or wedged: that is the answer, not a per-item detail. */
export const RUNTIME_DOWN: readonly SourceErrorCode[] = ['runtime_unreachable', 'runtime_timeout'];

/** A request value refused; the detail starts with the parameter's name, as every caller writes it. */
export const badParameter = (param: string, detail: string) => new SourceError('bad_parameter', detail, { param });

/** The code of a host path refusal (hostfs's HostPathError codes). */
export const HOST_PATH_CODES: Record<HostPathCode, SourceErrorCode> = {
  EXDEV: 'path_outside_root',
  EFTYPE: 'path_not_regular',
  ELOOP: 'path_link_loop',
};
