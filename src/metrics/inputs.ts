/**
 * What one scrape reads, from the sources other layers own (no I/O of its own):
 * kubepods cgroups with names from the runtime, CRI Status, the container list,
 * node PID and disk use, kubelet healthz, kernel OOM kills. Each input is read
 * at most once per scrape, lazily, with its own deadline; one that fails or is
 * late leaves its series out and sets nodetruth_scrape_source_up{source} to 0.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { DiskUse, KubeletHealth, PidUse } from '../model/node.js';
import type { Container, PodSandbox, RuntimeStatus } from '../model/runtime.js';
import { type StatFile, walkKubepods } from '../sources/cgroup/cgroups.js';
import { runtimeIndex, type RuntimeIndex, type RuntimeLister } from '../sources/cgroup/names.js';
import { readRecords, requireV2 } from '../sources/cgroup/view.js';
import { diskUse, NODE_DISKS, pidUse } from '../sources/node/health.js';
import { kubeletHealthz } from '../sources/node/kubelet.js';
import { OomSource, type AttributedOomKill } from '../sources/oom/oom.js';
import type { AppDeps } from '../server/deps.js';
import { logSources } from '../server/log-sources.js';

export interface RuntimeLists {
  containers: Container[];
  sandboxes: PodSandbox[];
}

/** The reads behind the metrics; tests replace any of them. */
export interface MetricsInputs {
  /** null: no CRI socket configured (no runtime series, no error) */
  runtimeStatus(): Promise<RuntimeStatus | null>;
  runtimeLists(): Promise<RuntimeLists | null>;
  /**
   * every kubepods cgroup, named from `index` when the runtime answered; the index
   * comes as a promise so the tree can be walked while the runtime lists. The scrape
   * passes null and names the series itself (labels.ts), so its reads never wait for it.
   */
  cgroups(index: Promise<RuntimeIndex | null>, warnings?: string[]): Promise<CgroupRecord[]>;
  /** `warnings`: items skipped (an unreadable cgroup or node file); counted in nodetruth_scrape_skipped_items */
  pids(warnings?: string[]): Promise<PidUse>;
  disks(warnings?: string[]): Promise<DiskUse[]>;
  kubelet(): Promise<KubeletHealth>;
  /** kernel OOM kills the kernel log holds now (kmsg ring; not the journal: too slow for a scrape) */
  oomKills(): Promise<AttributedOomKill[]>;
}

/**
 * How long a scrape waits for each source when nothing overrides it. The runtime's comes
 * from --cri-timeout (sourceDeadlines): a fixed 2 s cut a runtime the operator had given
 * longer, and every container series lost its names. The kernel's is 5 s: the first
 * scrape reads and attributes the whole ring buffer, and at 2 s a loaded node lost it in
 * 4 of 5 first scrapes. All stay under Prometheus' default scrape timeout (10 s).
 */
export const DEFAULT_SOURCE_DEADLINES_MS = {
  runtime: 2000,
  cgroups: 5000,
  node: 2000,
  kubelet: 1000,
  kernel: 5000,
} as const;
export type MetricsSource = keyof typeof DEFAULT_SOURCE_DEADLINES_MS;
export type SourceDeadlines = Readonly<Record<MetricsSource, number>>;

/** The scrape's deadlines for this configuration: the runtime's is --cri-timeout; `overrides` win. */
export function sourceDeadlines(config: { criTimeoutMs: number }, overrides: Partial<SourceDeadlines> = {}): SourceDeadlines {
  return { ...DEFAULT_SOURCE_DEADLINES_MS, runtime: config.criTimeoutMs, ...overrides };
}

/**
 * The cgroup files the per-cgroup series come from (working set: current and
 * memory.stat's inactive_file; limit; OOM events; cpu.stat; PSI). A scrape reads
 * only these: half of /v1/cgroups' 17, and on a 1,000-container node the file
 * opens are most of a scrape's time.
 */
export const METRIC_CGROUP_FILES: readonly StatFile[] = [
  'memory.current',
  'memory.stat',
  'memory.max',
  'memory.events',
  'cpu.stat',
  'cpu.pressure',
  'memory.pressure',
  'io.pressure',
];

export function defaultInputs(deps: AppDeps): MetricsInputs {
  // the agent's kernel log reader, without the journal: a scrape must stay fast
  const oom = new OomSource(logSources(deps).kmsg, null, deps.hostFs);
  return {
    runtimeStatus: async () => (deps.cri ? deps.cri.status(false) : null),
    runtimeLists: async () => {
      if (!deps.cri) return null;
      const [containers, sandboxes] = await Promise.all([deps.cri.listContainers(), deps.cri.listPodSandboxes()]);
      return { containers, sandboxes };
    },
    cgroups: async (indexPromise, warnings) => {
      const [, found, index] = await Promise.all([requireV2(deps.hostFs), walkKubepods(deps.hostFs, { warnings }), indexPromise]);
      return readRecords(deps.hostFs, found, index, METRIC_CGROUP_FILES, warnings);
    },
    pids: (warnings) => pidUse(deps.hostFs, warnings),
    disks: (warnings) => Promise.all(NODE_DISKS.map((p) => diskUse(deps.hostFs, p, warnings))),
    kubelet: () => kubeletHealthz(deps.config.kubeletHealthz, DEFAULT_SOURCE_DEADLINES_MS.kubelet),
    oomKills: async () => {
      const r = await oom.kills();
      if (!r.sources.kmsg) throw new Error(r.warnings.join('; ') || 'kernel log unreadable');
      return r.kills;
    },
  };
}

/** The runtime lists as runtimeIndex (the cgroup source's name join) wants them. */
export async function indexFrom(lists: RuntimeLists | null): Promise<RuntimeIndex | null> {
  if (!lists) return null;
  const lister: RuntimeLister = { listContainers: async () => lists.containers, listPodSandboxes: async () => lists.sandboxes };
  const j = await runtimeIndex(lister, 1000);
  return j.index;
}
