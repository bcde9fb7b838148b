/**
 * The runtime's index: containers and sandboxes by id and pods by UID, from one
 * ListContainers + ListPodSandbox per reading (src/reading.ts; ListImages too where the
 * runtime lists image IDs for names) shared by every caller
 * (RuntimeView's rows, the cgroup source's names, metrics, triage), and the names they give.
 *
 * Kept across readings (DESIGN.md): a container ID's pod and container names never
 * change, so the names of the last successful list are kept, for as long as that
 * list holds the id. A runtime late for a deadline leaves every cgroup and series
 * with the names it had; an id the last list no longer holds is forgotten.
 */
import type { RuntimeNames } from '../model/cgroup.js';
import type { Container, Image, PodSandbox } from '../model/runtime.js';
import { SingleFlight } from '../lib/concurrency.js';
import { withinDeadline } from '../lib/deadline.js';
import { isSourceError } from '../readers/errors.js';

interface RuntimeLister {
  listContainers(): Promise<Container[]>;
  listPodSandboxes(): Promise<PodSandbox[]>;
  listImages?(): Promise<Image[]>;
}

const IMAGE_ID = /^sha256:[0-9a-f]{64}$/;

/**
 * Containers listed by image ID named by that image's first tag, as the runtime's
 * ContainerStatus and kubectl name them. containerd before 1.7 lists kubelet's containers
 * so: kubelet passes the image ID, and the name it also passes (user_specified_image) is
 * newer than that runtime. One ListImages, only when a row needs it; an ID whose image has
 * no tag, or a ListImages that failed, stays the ID (still the truth, only less readable).
 */
async function withImageNames(cri: RuntimeLister, containers: Container[]): Promise<Container[]> {
  if (!cri.listImages || !containers.some((c) => IMAGE_ID.test(c.image))) return containers;
  const tags = new Map<string, string>();
  try {
    for (const i of await cri.listImages()) if (i.repoTags[0]) tags.set(i.id, i.repoTags[0]);
  } catch {
    return containers;
  }
  return containers.map((c) => {
    const tag = tags.get(c.image);
    return tag === undefined ? c : { ...c, image: tag };
  });
}

interface PodNames {
  podName: string | null;
  podNamespace: string | null;
  podUid: string | null;
}

/** A pod's name, namespace and UID: from its sandbox when the runtime lists it, else from the io.kubernetes.pod.* labels the kubelet puts on each container. */
export function podOf(c: Pick<Container, 'labels'> | undefined, sandbox: PodSandbox | undefined): PodNames {
  return {
    podName: sandbox?.name ?? c?.labels['io.kubernetes.pod.name'] ?? null,
    podNamespace: sandbox?.namespace ?? c?.labels['io.kubernetes.pod.namespace'] ?? null,
    podUid: sandbox?.uid ?? c?.labels['io.kubernetes.pod.uid'] ?? null,
  };
}

/** What one successful pair of lists says, indexed. */
export class RuntimeIndex {
  readonly containers: Map<string, Container>;
  readonly sandboxes: Map<string, PodSandbox>;
  /** by pod UID: the newest sandbox (a pod whose sandbox was recreated has several) */
  readonly podsByUid = new Map<string, PodSandbox>();
  /** the names of everything listed, by container or sandbox id and by pod UID */
  readonly names: RuntimeNameBook;

  /**
   * `containerList`: the containers with their images named (withImageNames); `listed`: the
   * runtime's own answer, for the bundle's raw calls
   */
  constructor(
    readonly containerList: readonly Container[],
    readonly sandboxList: readonly PodSandbox[],
    readonly listed: readonly Container[] = containerList,
  ) {
    this.containers = new Map(containerList.map((c) => [c.id, c]));
    this.sandboxes = new Map(sandboxList.map((s) => [s.id, s]));
    for (const s of sandboxList) {
      const prev = this.podsByUid.get(s.uid);
      const newer = !prev || (s.state === 'SANDBOX_READY' && prev.state !== 'SANDBOX_READY') || (s.state === prev.state && (s.createdAt ?? '') > (prev.createdAt ?? ''));
      if (newer) this.podsByUid.set(s.uid, s);
    }
    this.names = RuntimeNameBook.of(this);
  }

  /** the pod of a listed container, resolved once (the sandbox's names, else its labels') */
  podOf(c: Container): PodNames {
    return podOf(c, this.sandboxes.get(c.podId));
  }
}

/** The names of one listed id: never change for that id. */
interface IdNames extends PodNames {
  /** null for a sandbox */
  containerName: string | null;
  image: string;
  sandbox: boolean;
}

const NO_NAMES: RuntimeNames = { podName: null, podNamespace: null, containerName: null, sandbox: null };

/** Names only, by container/sandbox id and pod UID: what may outlive the list it came from. */
export class RuntimeNameBook {
  static readonly EMPTY = new RuntimeNameBook(new Map(), new Map());

  private constructor(
    private readonly byId: ReadonlyMap<string, IdNames>,
    private readonly byUid: ReadonlyMap<string, { podName: string; podNamespace: string }>,
  ) {}

  static of(index: RuntimeIndex): RuntimeNameBook {
    const byId = new Map<string, IdNames>();
    for (const s of index.sandboxList) byId.set(s.id, { podName: s.name, podNamespace: s.namespace, podUid: s.uid, containerName: null, image: '', sandbox: true });
    for (const c of index.containers.values()) byId.set(c.id, { ...index.podOf(c), containerName: c.name, image: c.image, sandbox: false });
    const byUid = new Map([...index.podsByUid].map(([uid, s]) => [uid, { podName: s.name, podNamespace: s.namespace }]));
    return new RuntimeNameBook(byId, byUid);
  }

  get size(): number {
    return this.byId.size;
  }

  id(id: string): IdNames | undefined {
    return this.byId.get(id);
  }

  pod(uid: string): { podName: string; podNamespace: string } | undefined {
    return this.byUid.get(uid);
  }

  /** The names of a cgroup (a pod's by its UID, a container's by its ID); nulls where the runtime never said. */
  of(cg: { podUid: string; containerId: string | null }): RuntimeNames {
    const pod = this.byUid.get(cg.podUid);
    if (cg.containerId === null) return pod ? { podName: pod.podName, podNamespace: pod.podNamespace, containerName: null, sandbox: null } : NO_NAMES;
    const n = this.byId.get(cg.containerId);
    if (!n && !pod) return NO_NAMES;
    return {
      podName: n?.podName ?? pod?.podName ?? null,
      podNamespace: n?.podNamespace ?? pod?.podNamespace ?? null,
      containerName: n?.containerName ?? null,
      sandbox: n ? n.sandbox : null,
    };
  }
}

/**
 * The runtime's names joined within a deadline. `names` is always usable: the fresh
 * list's when the runtime answered, else the last successful list's (possibly empty).
 */
export type RuntimeJoin =
  | { joined: true; index: RuntimeIndex; names: RuntimeNameBook }
  | { joined: false; index: null; names: RuntimeNameBook; detail: string };

/** The `runtime` member of an answer that joined names. */
export const joinSummary = (j: RuntimeJoin) =>
  j.joined ? { joined: true as const } : { joined: false as const, detail: j.detail, ...(j.names.size > 0 ? { namesFrom: 'last successful list' as const } : {}) };

export class RuntimeIndexSource {
  private readonly flights = new SingleFlight();
  private remembered = RuntimeNameBook.EMPTY;

  /** `deadlineMs`: how long a join waits for the runtime (from --cri-timeout) */
  constructor(
    private readonly cri: RuntimeLister | null,
    readonly deadlineMs: number,
  ) {}

  /** Both lists, indexed; one pair of calls per reading. Throws what the runtime threw. */
  index(): Promise<RuntimeIndex> {
    const cri = this.cri;
    if (!cri) return Promise.reject(new Error('no CRI socket configured or found'));
    return this.flights.do('index', async () => {
      const [listed, sandboxes] = await Promise.all([cri.listContainers(), this.sandboxes()]);
      const index = new RuntimeIndex(await withImageNames(cri, listed), sandboxes, listed);
      this.remembered = index.names;
      return index;
    });
  }

  /** ListPodSandbox alone (crictl pods), the same call as the reading's index(). */
  sandboxes(): Promise<PodSandbox[]> {
    const cri = this.cri;
    if (!cri) return Promise.reject(new Error('no CRI socket configured or found'));
    return this.flights.do('sandboxes', () => cri.listPodSandboxes());
  }

  /** The names of what the last successful list held (empty before one). */
  get names(): RuntimeNameBook {
    return this.remembered;
  }

  /** The index within `deadlineMs`; never throws. On a miss, the names of the last successful list. */
  async join(deadlineMs = this.deadlineMs): Promise<RuntimeJoin> {
    if (!this.cri) return { joined: false, index: null, names: RuntimeNameBook.EMPTY, detail: 'no CRI socket configured or found: IDs only' };
    const o = await withinDeadline(() => this.index(), deadlineMs, 'runtime');
    if (o.ok) return { joined: true, index: o.value, names: o.value.names };
    const names = this.remembered;
    const kept = names.size > 0 ? 'names of the last successful list' : 'IDs only';
    // a CRI call past its own deadline (the same --cri-timeout) is the runtime not answering, as a missed join is
    const late = o.timedOut || isSourceError(o.cause, 'runtime_timeout');
    return { joined: false, index: null, names, detail: late ? `${o.error}: ${kept}` : `runtime unavailable: ${o.error}: ${kept}` };
  }
}
