/**
 * What one scrape reads, from the sources other layers own (no I/O of its own):
 * kubepods cgroups with names from the runtime, CRI Status, the container list,
 * node PID and disk use, kubelet healthz, kernel OOM kills. Each input is read at
 * most once per scrape, lazily, within its part's deadline (deadlines.ts); one that
 * fails or is late leaves its series out and sets nodetruth_scrape_source_up{source} to 0.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { DiskUse, KubeletHealth, NodeFacts, PidUse } from '../model/node.js';
import type { Container, PodSandbox, RuntimeStatus } from '../model/runtime.js';
import type { StatFile } from '../readers/cgroup/stats.js';
import type { RuntimeIndex, RuntimeNameBook } from '../view/runtime-index.js';
import type { Sources } from '../sources.js';
import { nodeFacts } from '../readers/node/facts.js';
import { diskUse, NODE_DISKS, pidUse } from '../view/node-health.js';
import { kubeletHealthz } from '../readers/node/kubelet.js';
import type { AttributedOomKill } from '../view/oom.js';
import { deadlines } from '../deadlines.js';

export interface RuntimeLists {
  containers: readonly Container[];
  sandboxes: readonly PodSandbox[];
  /** the same lists indexed, with their names */
  index: RuntimeIndex;
}

/** The reads behind the metrics; tests replace any of them. */
export interface MetricsInputs {
  /** null: no CRI socket configured (no runtime series, no error) */
  runtimeStatus(): Promise<RuntimeStatus | null>;
  runtimeLists(): Promise<RuntimeLists | null>;
  /**
   * The names series carry: those of `lists` when the runtime answered in this scrape, else those
   * of the last successful list (a container ID's names never change: a slow runtime renames nothing)
   */
  names(lists: RuntimeLists | null): RuntimeNameBook;
  /** every kubepods cgroup, unnamed: labels.ts joins the names per series, so the files are read while the runtime lists */
  cgroups(warnings?: string[]): Promise<CgroupRecord[]>;
  /** `warnings`: items skipped (an unreadable cgroup or node file); counted in nodetruth_scrape_skipped_items */
  pids(warnings?: string[]): Promise<PidUse>;
  disks(warnings?: string[]): Promise<DiskUse[]>;
  kubelet(): Promise<KubeletHealth>;
  /** kernel OOM kills the kernel log holds now (kmsg ring; not the journal: too slow for a scrape) */
  oomKills(): Promise<AttributedOomKill[]>;
  /**
   * conntrack, taint, D/Z processes by pod, kubelet certificates and eviction thresholds (GET /v1/node
   * `facts`), against `disks`, the scrape's own statfs (not made twice); `warnings`: parts that could not be read
   */
  facts(disks: Promise<DiskUse[]>, warnings?: string[]): Promise<NodeFacts>;
}

/**
 * The cgroup files the per-cgroup series come from (working set: current and
 * memory.stat's inactive_file; memory.max and memory.high; OOM and high events;
 * cpu.stat; PSI). A scrape reads only these: half of /v1/cgroups' 18, and on a
 * 1,000-container node the file opens are most of a scrape's time.
 */
export const METRIC_CGROUP_FILES: readonly StatFile[] = [
  'memory.current',
  'memory.stat',
  'memory.max',
  'memory.high',
  'memory.events',
  'cpu.stat',
  'cpu.pressure',
  'memory.pressure',
  'io.pressure',
];

export function defaultInputs(s: Sources): MetricsInputs {
  const kubeletMs = deadlines(s.config).kubeletHealthz;
  return {
    runtimeStatus: async () => (s.cri ? s.cri.status(false) : null),
    runtimeLists: async () => {
      if (!s.cri) return null;
      // the lists every other reader shares in flight (view/runtime-index.ts)
      const index = await s.index.index();
      return { containers: index.containerList, sandboxes: index.sandboxList, index };
    },
    names: (lists) => (lists ? lists.index.names : s.index.names),
    cgroups: async (warnings) => {
      const r = await s.cgroups.records({ names: false, only: METRIC_CGROUP_FILES });
      warnings?.push(...r.warnings);
      return r.items;
    },
    pids: (warnings) => pidUse(s.hostFs, warnings),
    disks: (warnings) => Promise.all(NODE_DISKS.map((p) => diskUse(s.hostFs, p, warnings))),
    kubelet: () => kubeletHealthz(s.config.kubeletHealthz, kubeletMs),
    oomKills: async () => {
      // the kernel log ring alone: a scrape must stay fast
      const r = await s.oomRing.kills();
      if (!r.sources.kmsg) throw new Error(r.warnings.join('; ') || 'kernel log unreadable');
      return r.kills;
    },
    facts: (disks, warnings) => nodeFacts(s.hostFs, { cri: s.cri, disks, ...(warnings ? { warnings } : {}) }),
  };
}
