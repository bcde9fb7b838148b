/**
 * What every rule shares: the Rule shape, the lookups built once per snapshot,
 * and how a finding names its pod and container.
 */
import type { CgroupRecord } from '../../model/cgroup.js';
import type { PodSandbox } from '../../model/runtime.js';
import type { Finding, Subject } from '../../model/triage.js';
import type { ContainerRow } from '../../view/runtime-view.js';
import { shortId } from '../../format.js';
import type { RuleName } from '../findings.js';
import type { TriageSnapshot } from '../snapshot.js';

/** A pure function from one snapshot to findings; ids and severities are rules/findings.ts's. */
export interface Rule {
  name: RuleName;
  /** finding ids this rule may emit (its entries in rules/findings.ts) */
  ids: readonly string[];
  run(s: TriageSnapshot, ix: SnapshotIndex): Finding[];
}

/** Evidence paths are written as on the host, whatever --host-root is. */
export const CG = '/sys/fs/cgroup';

/** Lookups shared by the rules, built once per snapshot. */
export class SnapshotIndex {
  readonly containers: ContainerRow[];
  readonly containersById = new Map<string, ContainerRow>();
  readonly sandboxesById = new Map<string, PodSandbox>();
  readonly sandboxesByUid = new Map<string, PodSandbox[]>();
  readonly cgroupsByContainer = new Map<string, CgroupRecord>();
  readonly podCgroups = new Map<string, CgroupRecord>();

  constructor(s: TriageSnapshot) {
    this.containers = s.containers.ok ? s.containers.value : [];
    for (const c of this.containers) this.containersById.set(c.id, c);
    for (const p of s.pods.ok ? s.pods.value : []) {
      this.sandboxesById.set(p.id, p);
      const l = this.sandboxesByUid.get(p.uid) ?? [];
      l.push(p);
      this.sandboxesByUid.set(p.uid, l);
    }
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
      if (r.containerId) this.cgroupsByContainer.set(r.containerId, r);
      else this.podCgroups.set(r.podUid, r);
    }
  }

  /** names for a pod UID and container id, from whatever the runtime said */
  subject(podUid: string | null, containerId: string | null): Subject {
    const c = containerId ? this.containersById.get(containerId) : undefined;
    const sb = containerId ? this.sandboxesById.get(containerId) : undefined;
    const pod = podUid ? this.sandboxesByUid.get(podUid)?.[0] : undefined;
    const cg = containerId ? this.cgroupsByContainer.get(containerId) : podUid ? this.podCgroups.get(podUid) : undefined;
    const out: Subject = {};
    const ns = c?.podNamespace || sb?.namespace || pod?.namespace || cg?.podNamespace;
    const name = c?.podName || sb?.name || pod?.name || cg?.podName;
    if (ns) out.namespace = ns;
    if (name) out.pod = name;
    if (podUid ?? c?.podUid) out.podUid = (podUid ?? c?.podUid)!;
    const cname = c?.name ?? (sb ? 'POD' : cg?.containerName);
    if (cname) out.container = cname;
    if (containerId) out.containerId = containerId;
    return out;
  }
}

/** "shop/web-0 container app", "pod <uid>", or "the node". */
export const who = (s: Subject): string => {
  const pod = s.pod ? `${s.namespace ? `${s.namespace}/` : ''}${s.pod}` : s.podUid ? `pod ${s.podUid}` : '';
  const c = s.container ? `container ${s.container}` : s.containerId ? `container ${shortId(s.containerId)}` : '';
  return [pod, c].filter(Boolean).join(' ') || 'the node';
};

/** "1 line", "2 lines": counts in details read as sentences. */
export const plural = (n: number, word: string, many = `${word}s`): string => `${n} ${n === 1 ? word : many}`;
