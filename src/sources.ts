/**
 * The composition root: every source of one agent process, built once, in one
 * place, from the configuration. The HTTP server, the metrics, triage, bundles
 * and the CLIs all take this one object; none of them builds a source itself, so
 * a test points all of them at a fixture host root, a fake CRI or a real containerd.
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { deadlines } from './deadlines.js';
import { CgroupSource } from './view/named-cgroups.js';
import { CriClient } from './readers/cri/client.js';
import { noCriSocket } from './readers/cri/errors.js';
import { RuntimeIndexSource } from './view/runtime-index.js';
import { RuntimeView } from './view/runtime-view.js';
import { HostFs } from './readers/hostfs/hostfs.js';
import { JournalSource } from './readers/journal/journalctl.js';
import { KernelLog } from './view/kernel-log.js';
import { KmsgReader } from './readers/kmsg/reader.js';
import { lazyKubeAccess, type KubeAccess } from './readers/kube/api.js';
import { OomSource } from './view/oom.js';
import { PodLogs } from './readers/podlogs/podlogs.js';
import { procReads } from './readers/proc/limiter.js';
import { criLatencyOf } from './readers/node/cri-latency.js';
import { statfsCalls } from './readers/node/statfs.js';

/** One source's answer to "can you read your layer right now?" */
export interface SourceReadiness {
  ok: boolean;
  detail: string;
}

type ReadinessCheck = () => Promise<SourceReadiness>;

export interface Sources {
  config: Config;
  log: Logger;
  hostFs: HostFs;
  /** null when no CRI socket was found and none was configured */
  cri: CriClient | null;
  /** the runtime's lists, shared by every reader, and the names they give (kept while listed) */
  index: RuntimeIndexSource;
  /** ListContainers + ContainerStatus rows (crictl ps -a); null without a CRI socket */
  runtime: RuntimeView | null;
  /** kubepods cgroups: mode, records named from the runtime within its deadline, match by id */
  cgroups: CgroupSource;
  journal: JournalSource;
  kmsg: KmsgReader;
  kernel: KernelLog;
  /** OOM kills from /dev/kmsg and the journal */
  oom: OomSource;
  /** OOM kills from /dev/kmsg alone: what a scrape can afford (the journal is too slow for one) */
  oomRing: OomSource;
  podLogs: PodLogs;
  /** The API server, for /v1/node/drift and --auth kubernetes; loaded on first use, `ok: false` with the reason otherwise. */
  kube: () => KubeAccess;
  /** Named readiness checks, one per source, reported by /readyz. */
  readiness: Map<string, ReadinessCheck>;
}

/** Build the sources for one agent process; the caller calls closeSources. */
export function createSources(config: Config, log: Logger): Sources {
  const hostFs = new HostFs(config.hostRoot);
  const { criCall } = deadlines(config);
  const cri = config.criEndpoint ? new CriClient(config.criEndpoint, criCall) : null;
  criLatencyOf(cri); // every CRI call from the start, for /v1/node's list latency (PLEG)
  const index = new RuntimeIndexSource(cri, criCall);
  const journal = new JournalSource({ hostFs, journalctl: config.journalctl });
  const kmsg = new KmsgReader(hostFs, config.kmsgPath);
  return {
    config,
    log,
    hostFs,
    cri,
    index,
    runtime: cri ? new RuntimeView(cri, index) : null,
    cgroups: new CgroupSource(hostFs, index),
    journal,
    kmsg,
    kernel: new KernelLog(kmsg, hostFs, journal),
    oom: new OomSource(kmsg, journal, hostFs),
    oomRing: new OomSource(kmsg, null, hostFs),
    podLogs: new PodLogs(hostFs),
    kube: lazyKubeAccess({ kubeconfig: config.kubeconfig }),
    readiness: readinessChecks(config, hostFs, cri),
  };
}

export function closeSources(s: Sources): void {
  s.cri?.close();
}

/** The runtime view, or runtime_unconfigured saying where a socket was looked for. */
export function requireRuntime(s: Pick<Sources, 'runtime' | 'config'>): RuntimeView {
  if (!s.runtime) throw noCriSocket(s.config.hostRoot);
  return s.runtime;
}

function readinessChecks(config: Config, hostFs: HostFs, cri: CriClient | null): Map<string, ReadinessCheck> {
  const checks = new Map<string, ReadinessCheck>();
  checks.set('runtime', async () => {
    if (!cri) return { ok: false, detail: 'no CRI socket found; pass --cri-endpoint' };
    const v = await cri.version();
    return { ok: true, detail: `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}) at ${cri.socketPath}` };
  });
  checks.set('hostRoot', async () => {
    const ok = await hostFs.exists('/proc/self/stat');
    return { ok, detail: ok ? `reading the host under ${config.hostRoot}` : `no /proc under ${config.hostRoot}` };
  });
  // cmdline reads stuck on a process's memory map (readers/proc/limiter.ts): not green while they hang
  checks.set('proc', async () => procReads.readiness());
  // a hung mount's statfs never returns (node/statfs.ts): not green while one is out
  checks.set('mounts', async () => statfsCalls.readiness());
  return checks;
}
