import { status, type ServiceError } from '@grpc/grpc-js';
import { formatDuration } from '../../format.js';
import { SourceError } from '../errors.js';
import { CRI_SOCKETS } from '../../rules/node-os.js';

/**
 * gRPC failures as an on-call engineer should read them. The cause text of
 * UNAVAILABLE is grpc-js's "No connection established. Last error: Error:
 * connect ENOENT /run/..." — keep the errno part, drop the boilerplate.
 */
export function mapCriError(err: ServiceError, method: string, socketPath: string, timeoutMs: number): SourceError {
  switch (err.code) {
    case status.UNAVAILABLE:
      return new SourceError('runtime_unreachable', `runtime unreachable at ${socketPath}: ${unavailableCause(err.details)}`);
    case status.DEADLINE_EXCEEDED:
      return new SourceError('runtime_timeout', `runtime did not answer within ${formatDuration(timeoutMs)} (${method} on ${socketPath})`);
    case status.NOT_FOUND:
      return new SourceError('not_found', `runtime: ${err.details}`);
    case status.UNIMPLEMENTED:
      return new SourceError('runtime_unimplemented', `runtime does not implement ${method}: ${err.details}`);
    default:
      return new SourceError('runtime_error', `runtime ${method} failed: ${status[err.code] ?? err.code}: ${err.details}`);
  }
}

export function unavailableCause(details: string): string {
  const m = /Last error: (?:Error: )?(.*?)(?:\. Resolution note:.*)?$/.exec(details);
  return (m?.[1] ?? details).trim() || 'connection failed';
}

/** No CRI socket configured and none found under the host root. */
export const noCriSocket = (hostRoot: string): SourceError =>
  new SourceError(
    'runtime_unconfigured',
    `no CRI socket configured or found under ${hostRoot} (asked kubelet's --container-runtime-endpoint and its config, containerd's --address, then looked for ${CRI_SOCKETS.map((x) => x.path.slice(1)).join(', ')}); pass --cri-endpoint`,
  );
