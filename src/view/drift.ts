/**
 * The API server's view against the runtime's, by pod UID (pure: records in,
 * report out). kubelet keeps the two in step; when it cannot (a wedged PLEG, a
 * runtime that restarted, a node that was partitioned) they drift apart, and
 * neither side alone shows it.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { ContainerState, PodSandbox, SandboxState } from '../model/runtime.js';

/** kubelet's annotation on a mirror pod: the static pod's hash, which is the UID the runtime sees. */
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

type ApiContainerState = 'running' | 'waiting' | 'terminated' | 'unknown';

interface ApiContainer {
  name: string;
  init: boolean;
  /** runtime container id without the scheme (containerd://); null before the first start */
  containerId: string | null;
  state: ApiContainerState;
  reason: string | null;
  restartCount: number;
}

/** The parts of a v1 Pod that drift looks at. */
interface ApiPod {
  uid: string;
  /** the UID the runtime knows the pod by: the mirror annotation for static pods, else uid */
  runtimeUid: string;
  namespace: string;
  name: string;
  phase: string;
  createdAt: string | null;
  deleting: boolean;
  containers: ApiContainer[];
}

/** A runtime container, as much as drift needs of it (ContainerRow fits). */
interface RuntimeContainerRef {
  id: string;
  name: string;
  podId: string;
  podUid: string;
  state: ContainerState;
  exitCode: number | null;
  reason: string | null;
}

interface AbsentPod {
  uid: string;
  namespace: string;
  name: string;
  phase: string;
  ageSeconds: number | null;
  deleting: boolean;
}

interface OrphanSandbox {
  id: string;
  uid: string;
  namespace: string;
  name: string;
  state: SandboxState;
  createdAt: string | null;
}

interface StateMismatch {
  podUid: string;
  namespace: string;
  pod: string;
  container: string;
  containerId: string | null;
  api: ApiContainerState;
  apiReason: string | null;
  /** the runtime's state, or "absent" when it has no container with that id */
  runtime: ContainerState | 'absent';
  exitCode: number | null;
  runtimeReason: string | null;
}

export interface DriftReport {
  nodeName: string;
  apiPods: number;
  sandboxes: number;
  /** bound to this node in the API, not Succeeded/Failed, and no sandbox on the node */
  boundButAbsent: AbsentPod[];
  /** sandboxes on the node that no pod bound to it accounts for */
  orphanSandboxes: OrphanSandbox[];
  /** the API says running and the runtime does not, or the reverse */
  stateMismatches: StateMismatch[];
  inSync: boolean;
}

const stripScheme = (id: string | undefined) => (id ? id.replace(/^[a-z0-9-]+:\/\//, '') : null);

function apiContainer(s: V1ContainerStatus, init: boolean): ApiContainer {
  const st = s.state;
  const state: ApiContainerState = st?.running ? 'running' : st?.terminated ? 'terminated' : st?.waiting ? 'waiting' : 'unknown';
  const reason = st?.terminated?.reason ?? st?.waiting?.reason ?? null;
  return { name: s.name, init, containerId: stripScheme(s.containerID), state, reason, restartCount: s.restartCount ?? 0 };
}

const iso = (d: Date | string | undefined | null): string | null => (d ? new Date(d).toISOString() : null);

export function toApiPod(p: V1Pod): ApiPod {
  const uid = p.metadata?.uid ?? '';
  const mirror = p.metadata?.annotations?.[MIRROR_ANNOTATION];
  return {
    uid,
    runtimeUid: mirror && mirror !== '' ? mirror : uid,
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    phase: p.status?.phase ?? 'Unknown',
    createdAt: iso(p.metadata?.creationTimestamp),
    deleting: Boolean(p.metadata?.deletionTimestamp),
    containers: [
      ...(p.status?.initContainerStatuses ?? []).map((s) => apiContainer(s, true)),
      ...(p.status?.containerStatuses ?? []).map((s) => apiContainer(s, false)),
    ],
  };
}

const TERMINAL_PHASES = new Set(['Succeeded', 'Failed']);

export function compareDrift(nodeName: string, pods: ApiPod[], sandboxes: PodSandbox[], containers: RuntimeContainerRef[], now = Date.now()): DriftReport {
  const sandboxUids = new Set(sandboxes.map((s) => s.uid));
  const apiUids = new Set<string>();
  for (const p of pods) {
    apiUids.add(p.uid);
    apiUids.add(p.runtimeUid);
  }
  const boundButAbsent: AbsentPod[] = pods
    .filter((p) => !TERMINAL_PHASES.has(p.phase) && !sandboxUids.has(p.runtimeUid) && !sandboxUids.has(p.uid))
    .map((p) => ({
      uid: p.uid,
      namespace: p.namespace,
      name: p.name,
      phase: p.phase,
      ageSeconds: p.createdAt ? Math.max(0, Math.round((now - Date.parse(p.createdAt)) / 1000)) : null,
      deleting: p.deleting,
    }));
  const orphanSandboxes: OrphanSandbox[] = sandboxes
    .filter((s) => !apiUids.has(s.uid))
    .map((s) => ({ id: s.id, uid: s.uid, namespace: s.namespace, name: s.name, state: s.state, createdAt: s.createdAt }));

  const byId = new Map(containers.map((c) => [c.id, c]));
  const stateMismatches: StateMismatch[] = [];
  for (const p of pods) {
    for (const c of p.containers) {
      if (!c.containerId) continue;
      const rc = byId.get(c.containerId);
      const runtime = rc ? rc.state : 'absent';
      const disagree =
        (c.state === 'running' && runtime !== 'CONTAINER_RUNNING') || (c.state === 'terminated' && runtime === 'CONTAINER_RUNNING');
      // A terminated container the runtime already removed is normal garbage collection, not drift.
      if (!disagree) continue;
      stateMismatches.push({
        podUid: p.uid,
        namespace: p.namespace,
        pod: p.name,
        container: c.name,
        containerId: c.containerId,
        api: c.state,
        apiReason: c.reason,
        runtime,
        exitCode: rc?.exitCode ?? null,
        runtimeReason: rc?.reason ?? null,
      });
    }
  }
  const sortKey = (a: { namespace: string; name?: string; pod?: string }) => `${a.namespace}/${a.name ?? a.pod ?? ''}`;
  boundButAbsent.sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
  orphanSandboxes.sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
  return {
    nodeName,
    apiPods: pods.length,
    sandboxes: sandboxes.length,
    boundButAbsent,
    orphanSandboxes,
    stateMismatches,
    inSync: boundButAbsent.length === 0 && orphanSandboxes.length === 0 && stateMismatches.length === 0,
  };
}
