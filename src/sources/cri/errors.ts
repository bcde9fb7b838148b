import { status, type ServiceError } from '@grpc/grpc-js';
import { formatDuration } from '../../format.js';
import { notFound, Problem, timedOut, unavailable } from '../../errors.js';

/**
 * gRPC failures as an on-call engineer should read them. The cause text of
 * UNAVAILABLE is grpc-js's "No connection established. Last error: Error:
 * connect ENOENT /run/..." — keep the errno part, drop the boilerplate.
 */
export function mapCriError(err: ServiceError, method: string, socketPath: string, timeoutMs: number): Problem {
  switch (err.code) {
    case status.UNAVAILABLE:
      return unavailable(`runtime unreachable at ${socketPath}: ${unavailableCause(err.details)}`);
    case status.DEADLINE_EXCEEDED:
      return timedOut(`runtime did not answer within ${formatDuration(timeoutMs)} (${method} on ${socketPath})`);
    case status.NOT_FOUND:
      return notFound(`runtime: ${err.details}`);
    case status.UNIMPLEMENTED:
      return new Problem(501, 'Not implemented', `runtime does not implement ${method}: ${err.details}`);
    default:
      return new Problem(502, 'Runtime error', `runtime ${method} failed: ${status[err.code] ?? err.code}: ${err.details}`);
  }
}

export function unavailableCause(details: string): string {
  const m = /Last error: (?:Error: )?(.*?)(?:\. Resolution note:.*)?$/.exec(details);
  return (m?.[1] ?? details).trim() || 'connection failed';
}
