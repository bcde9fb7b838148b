import type { Container, ContainerStatus, PodSandbox } from '../../model/runtime.js';
import { isSourceError, RUNTIME_DOWN } from '../errors.js';
import { mapLimit, SingleFlight } from '../../util/concurrency.js';
import type { CriClient } from './client.js';
import { resolvePrefix } from './ids.js';

/** The per-row status failures of a list, as the `warnings` of an answer. */
export function statusWarnings(rows: readonly ContainerRow[]): string[] {
  return rows.filter((r) => r.statusError !== null).map((r) => `container ${r.id.slice(0, 13)}: ContainerStatus failed, listed without status fields: ${r.statusError}`);
}

/** A container as `crictl ps -a` lists it, plus what only ContainerStatus knows. */
export interface ContainerRow extends Container {
  podName: string;
  podNamespace: string;
  podUid: string;
  exitCode: number | null;
  reason: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** why ContainerStatus could not be read for this one container (the row keeps its list fields) */
  statusError: string | null;
}

/** Parallel ContainerStatus calls; enough to hide latency, few enough not to crowd a busy runtime. */
const STATUS_CONCURRENCY = 16;
/** A running container's status may change without its state changing (a child OOM kill sets reason). */
const LIVE_STATUS_TTL_MS = 1000;

interface CachedStatus {
  state: Container['state'];
  at: number;
  status: ContainerStatus;
}

/**
 * Joins ListContainers, ListPodSandbox and ContainerStatus into the rows the
 * API serves. The status cache holds only what cannot have changed: an exited
 * container's status for as long as it is listed, a live one's for 1 s while
 * its listed state is unchanged.
 */
export class RuntimeView {
  private readonly statusCache = new Map<string, CachedStatus>();
  private readonly flights = new SingleFlight();

  constructor(readonly cri: CriClient) {}

  /** Every container with its status: one ContainerStatus per container not in the cache. */
  containers(): Promise<ContainerRow[]> {
    return this.flights.do('containers', async () => {
      const { containers, podsById } = await this.listed();
      const listed = new Set(containers.map((c) => c.id));
      for (const id of this.statusCache.keys()) if (!listed.has(id)) this.statusCache.delete(id);
      return this.withStatus(containers, podsById);
    });
  }

  pods(): Promise<PodSandbox[]> {
    return this.flights.do('pods', () => this.cri.listPodSandboxes());
  }

  /** Resolving a prefix needs only the lists; the status is fetched for the one container found. */
  async resolveContainer(prefix: string): Promise<ContainerRow> {
    const { containers, podsById } = await this.listed();
    const found = resolvePrefix(containers, prefix, 'container');
    return (await this.withStatus([found], podsById))[0]!;
  }

  /** Every attempt of a container (same pod, same name), oldest first, with statuses. */
  async attemptsOf(row: Pick<Container, 'podId' | 'name'>): Promise<ContainerRow[]> {
    const { containers, podsById } = await this.listed();
    const same = containers.filter((c) => c.podId === row.podId && c.name === row.name).sort((a, b) => a.attempt - b.attempt);
    return this.withStatus(same, podsById);
  }

  /** The containers of one pod sandbox, with statuses. */
  async containersOf(podId: string): Promise<ContainerRow[]> {
    const { containers, podsById } = await this.listed();
    return this.withStatus(containers.filter((c) => c.podId === podId), podsById);
  }

  async resolvePod(prefix: string): Promise<PodSandbox> {
    return resolvePrefix(await this.pods(), prefix, 'pod sandbox');
  }

  private listed(): Promise<{ containers: Container[]; podsById: Map<string, PodSandbox> }> {
    return this.flights.do('listed', async () => {
      const [containers, pods] = await Promise.all([this.cri.listContainers(), this.cri.listPodSandboxes()]);
      return { containers, podsById: new Map(pods.map((p) => [p.id, p])) };
    });
  }

  private async withStatus(containers: Container[], podsById: Map<string, PodSandbox>): Promise<ContainerRow[]> {
    const statuses = await mapLimit(containers, STATUS_CONCURRENCY, (c) => this.cachedStatus(c));
    return containers.map((c, i) => toRow(c, podsById.get(c.podId), statuses[i]!));
  }

  private async cachedStatus(c: Container): Promise<{ status: ContainerStatus | null; error: string | null }> {
    const hit = this.statusCache.get(c.id);
    const now = Date.now();
    if (hit && hit.state === c.state && (c.state === 'CONTAINER_EXITED' || now - hit.at < LIVE_STATUS_TTL_MS)) return { status: hit.status, error: null };
    try {
      const status = await this.cri.containerStatus(c.id, false);
      this.statusCache.set(c.id, { state: c.state, at: now, status });
      return { status, error: null };
    } catch (err) {
      // Removed between the list and the status call: list it without status fields.
      if (isSourceError(err, 'not_found')) return { status: null, error: null };
      // The runtime as a whole is down or wedged: that is the answer, not a per-row detail.
      if (isSourceError(err, ...RUNTIME_DOWN)) throw err;
      // One container's status failed (a runtime error for it, a message we could not map):
      // the row stands on its list fields and says why the rest is missing.
      return { status: null, error: (err as Error).message };
    }
  }
}

function toRow(c: Container, pod: PodSandbox | undefined, { status: s, error }: { status: ContainerStatus | null; error: string | null }): ContainerRow {
  return {
    ...c,
    podName: pod?.name ?? c.labels['io.kubernetes.pod.name'] ?? '',
    podNamespace: pod?.namespace ?? c.labels['io.kubernetes.pod.namespace'] ?? '',
    podUid: pod?.uid ?? c.labels['io.kubernetes.pod.uid'] ?? '',
    exitCode: s ? s.exitCode : null,
    reason: s ? s.reason : null,
    startedAt: s?.startedAt ?? null,
    finishedAt: s?.finishedAt ?? null,
    statusError: error,
  };
}
