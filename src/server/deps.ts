import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { CriClient } from '../sources/cri/client.js';
import { noCriSocket } from '../sources/cri/errors.js';
import type { RuntimeView } from '../sources/cri/runtime-view.js';
import type { HostFs } from '../sources/hostfs/hostfs.js';
import type { KubeAccess } from '../sources/kube/api.js';

/** One source's answer to "can you read your layer right now?" */
export interface SourceReadiness {
  ok: boolean;
  detail: string;
}

export type ReadinessCheck = () => Promise<SourceReadiness>;

/**
 * Everything routes need, built once at start-up (or by a test). Routes never
 * construct sources themselves, so tests can point the app at a fixture host
 * root, a fake CRI server or a real containerd.
 */
export interface AppDeps {
  config: Config;
  log: Logger;
  hostFs: HostFs;
  /** null when no CRI socket was found and none was configured. */
  cri: CriClient | null;
  runtime: RuntimeView | null;
  /** The API server, for /v1/node/drift and --auth kubernetes; loaded on first use, `ok: false` with the reason otherwise. */
  kube: () => KubeAccess;
  /** Named readiness checks, one per source, reported by /readyz. */
  readiness: Map<string, ReadinessCheck>;
  /** Aborted when the agent shuts down: follow streams end on it. */
  shutdown: AbortSignal;
}

export function requireRuntime(deps: AppDeps): RuntimeView {
  if (!deps.runtime) {
    throw noCriSocket(deps.config.hostRoot);
  }
  return deps.runtime;
}
