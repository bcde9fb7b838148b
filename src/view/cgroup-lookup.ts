/**
 * The cgroup layer's pure parts: v2 required (cgroup_mode_unsupported with the
 * reason otherwise), records sorted, looked up by pod UID or container ID prefix.
 * The pipeline that finds, reads and names them is source.ts.
 */
import type { CgroupMode, CgroupRecord } from '../model/cgroup.js';
import { SourceError } from '../readers/errors.js';
import { onlyMatch } from '../readers/cri/ids.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import type { RuntimeJoin } from './runtime-index.js';
import { detectMode, type FoundCgroup } from '../readers/cgroup/cgroups.js';

type CgroupSort = 'memory' | 'throttling' | 'oom';

/** The mode, or cgroup_mode_unsupported naming what was found instead of cgroup v2. */
export async function requireV2(fs: HostFs): Promise<CgroupMode> {
  const mode = await detectMode(fs);
  if (mode.version !== 'v2') throw new SourceError('cgroup_mode_unsupported', mode.reason ?? `cgroup ${mode.version}: nodetruth reads cgroup v2 only`);
  return mode;
}

/** Cumulative throttled share of periods since the cgroup was created. */
const throttledShare = (r: CgroupRecord): number =>
  r.cpu.nrPeriods && r.cpu.nrThrottled !== null ? r.cpu.nrThrottled / r.cpu.nrPeriods : 0;

const SORTS: Record<CgroupSort, (a: CgroupRecord, b: CgroupRecord) => number> = {
  memory: (a, b) => (b.memory.current ?? -1) - (a.memory.current ?? -1),
  throttling: (a, b) => throttledShare(b) - throttledShare(a) || (b.cpu.throttledUsec ?? 0) - (a.cpu.throttledUsec ?? 0),
  oom: (a, b) =>
    (b.memory.events?.oomKill ?? -1) - (a.memory.events?.oomKill ?? -1) || (b.memory.events?.oom ?? -1) - (a.memory.events?.oom ?? -1),
};

export function sortRecords(items: CgroupRecord[], by: CgroupSort | undefined): CgroupRecord[] {
  // Array.prototype.sort is stable: ties keep the walk order (each pod, then its containers).
  return by ? [...items].sort(SORTS[by]) : items;
}

export interface CgroupMatch {
  match: 'pod' | 'container';
  /** the matched cgroup first; a pod's containers, or a container's pod, after it */
  cgroups: FoundCgroup[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A pod UID (exact; API-server UUID or a static pod's 32 hex) or a container ID
 * (exact or unique prefix, as containerd resolves them). not_found when nothing
 * matches, ambiguous_id with the candidates when a prefix is ambiguous.
 */
export function matchCgroupId(all: readonly FoundCgroup[], id: string, join?: RuntimeJoin): CgroupMatch {
  const pods = all.filter((c) => c.kind === 'pod' && c.podUid === id);
  const containers = UUID.test(id) ? [] : all.filter((c) => c.kind === 'container' && c.containerId!.startsWith(id));
  const exact = containers.filter((c) => c.containerId === id);
  const hits = exact.length === 1 ? exact : [...pods, ...containers];
  const hit = onlyMatch(hits, (h) => h.containerId ?? h.podUid, {
    none: () => notFoundDetail(id, join),
    many: (n) => `${n} cgroups match ${id}; give more characters`,
  });
  if (hit.kind === 'pod') return { match: 'pod', cgroups: [hit, ...all.filter((c) => c.kind === 'container' && c.podUid === hit.podUid)] };
  const pod = all.find((c) => c.kind === 'pod' && c.podUid === hit.podUid && c.driver === hit.driver);
  return { match: 'container', cgroups: pod ? [hit, pod] : [hit] };
}

function notFoundDetail(id: string, join?: RuntimeJoin): string {
  const base = `no kubepods cgroup for pod UID or container ID ${id}`;
  const c = join?.index ? [...join.index.containers.values()].find((x) => x.id.startsWith(id)) : undefined;
  if (c) {
    const pod = join!.index!.sandboxes.get(c.podId);
    return `${base}: the runtime knows container ${c.id} (${c.name}, ${c.state}) but its cgroup is gone, as it is the moment a container exits; its pod's cgroup${pod ? ` (pod UID ${pod.uid})` : ''} keeps the hierarchical memory.events OOM counts`;
  }
  return `${base}; a container's cgroup is removed when it exits, its pod's cgroup keeps the OOM counts`;
}

