import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { CriClient } from './sources/cri/client.js';
import { RuntimeView } from './sources/cri/runtime-view.js';
import { HostFs } from './sources/hostfs/hostfs.js';
import { lazyKubeAccess } from './sources/kube/api.js';
import { procReadiness } from './sources/proc/limiter.js';
import type { AppDeps, ReadinessCheck } from './server/deps.js';

/** Paths pino must never print, wherever they appear in a log object. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token', 'password', '*.password'];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    { level: config.logLevel, base: { name: 'nodetruth' }, redact: { paths: LOG_REDACT_PATHS, censor: '<redacted>' } },
    destination,
  );
}

/** Build the sources for one agent process. The caller owns `shutdown` and calls `closeDeps`. */
export function createDeps(config: Config, log: Logger, shutdown: AbortSignal): AppDeps {
  const hostFs = new HostFs(config.hostRoot);
  const cri = config.criEndpoint ? new CriClient(config.criEndpoint, config.criTimeoutMs) : null;
  const runtime = cri ? new RuntimeView(cri) : null;
  const readiness = new Map<string, ReadinessCheck>();
  readiness.set('runtime', async () => {
    if (!cri) return { ok: false, detail: 'no CRI socket found; pass --cri-endpoint' };
    const v = await cri.version();
    return { ok: true, detail: `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}) at ${cri.socketPath}` };
  });
  readiness.set('hostRoot', async () => {
    const ok = await hostFs.exists('/proc/self/stat');
    return { ok, detail: ok ? `reading the host under ${config.hostRoot}` : `no /proc under ${config.hostRoot}` };
  });
  // cmdline reads stuck on a process's memory map (sources/proc/limiter.ts): not green while they hang
  readiness.set('proc', async () => procReadiness());
  const kube = lazyKubeAccess({ kubeconfig: config.kubeconfig });
  return { config, log, hostFs, cri, runtime, kube, readiness, shutdown };
}

export function closeDeps(deps: AppDeps): void {
  deps.cri?.close();
}
