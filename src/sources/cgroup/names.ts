/**
 * Pod and container names for cgroups, from the runtime when it answers in
 * time. Two list calls (ListContainers, ListPodSandbox), no per-container
 * status calls; a runtime that is down or slow leaves every cgroup with its
 * IDs only and says why.
 */
import type { KubeCgroup, RuntimeNames } from '../../model/cgroup.js';
import type { Container, PodSandbox } from '../../model/runtime.js';

export interface RuntimeLister {
  listContainers(): Promise<Container[]>;
  listPodSandboxes(): Promise<PodSandbox[]>;
}

export interface RuntimeIndex {
  containers: Map<string, Container>;
  sandboxes: Map<string, PodSandbox>;
  /** by pod UID: the newest sandbox (a pod whose sandbox was recreated has several) */
  podsByUid: Map<string, PodSandbox>;
}

export type RuntimeJoin = { joined: true; index: RuntimeIndex } | { joined: false; index: null; detail: string };

/** Ask the runtime for its lists within `deadlineMs`; never throws. */
export async function runtimeIndex(cri: RuntimeLister | null, deadlineMs: number): Promise<RuntimeJoin> {
  if (!cri) return { joined: false, index: null, detail: 'no CRI socket configured or found: IDs only' };
  const lists = Promise.all([cri.listContainers(), cri.listPodSandboxes()]);
  lists.catch(() => {}); // may settle after the deadline; nobody waits for it then
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), deadlineMs);
  });
  try {
    const r = await Promise.race([lists, deadline]);
    if (r === 'timeout') return { joined: false, index: null, detail: `runtime did not answer within ${deadlineMs} ms: IDs only` };
    const [containers, sandboxes] = r;
    const podsByUid = new Map<string, PodSandbox>();
    for (const s of sandboxes) {
      const prev = podsByUid.get(s.uid);
      const newer = !prev || (s.state === 'SANDBOX_READY' && prev.state !== 'SANDBOX_READY') || (s.state === prev.state && (s.createdAt ?? '') > (prev.createdAt ?? ''));
      if (newer) podsByUid.set(s.uid, s);
    }
    return {
      joined: true,
      index: { containers: new Map(containers.map((c) => [c.id, c])), sandboxes: new Map(sandboxes.map((s) => [s.id, s])), podsByUid },
    };
  } catch (err) {
    return { joined: false, index: null, detail: `runtime unavailable: ${(err as Error).message}: IDs only` };
  } finally {
    clearTimeout(timer);
  }
}

const NO_NAMES: RuntimeNames = { podName: null, podNamespace: null, containerName: null, sandbox: null };

export function namesFor(cg: KubeCgroup, index: RuntimeIndex | null): RuntimeNames {
  if (!index) return NO_NAMES;
  const pod = index.podsByUid.get(cg.podUid);
  if (cg.containerId === null) return { podName: pod?.name ?? null, podNamespace: pod?.namespace ?? null, containerName: null, sandbox: null };
  const sandbox = index.sandboxes.get(cg.containerId);
  const container = index.containers.get(cg.containerId);
  const known = sandbox !== undefined || container !== undefined;
  return {
    podName: sandbox?.name ?? pod?.name ?? container?.labels['io.kubernetes.pod.name'] ?? null,
    podNamespace: sandbox?.namespace ?? pod?.namespace ?? container?.labels['io.kubernetes.pod.namespace'] ?? null,
    containerName: container?.name ?? null,
    sandbox: known ? sandbox !== undefined : null,
  };
}
