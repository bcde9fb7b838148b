import type { Container, ContainerEnd, PodSandbox } from '../model/runtime.js';
import { isSourceError, RUNTIME_DOWN } from '../readers/errors.js';
import { mapLimit, SingleFlight } from '../lib/concurrency.js';
import { mapSliced, nextTurn } from '../lib/turns.js';
import type { CriClient } from '../readers/cri/client.js';
import type { RuntimeIndex, RuntimeIndexSource } from './runtime-index.js';
import { resolvePrefix } from '../readers/cri/ids.js';

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
/** Rows built between two yields at most (fewer when they take longer than lib/turns' SLICE_MS). */
export const ROW_SLICE = 500;

/**
 * A container's ContainerEnd cannot change while the runtime lists it in the same state: a
 * running container keeps its start time until it exits (a restart is a new container ID),
 * an exited one keeps everything. Created and unknown containers are asked every time.
 */
const SETTLED_STATES: ReadonlySet<string> = new Set(['CONTAINER_RUNNING', 'CONTAINER_EXITED']);

/**
 * Joins ListContainers, ListPodSandbox and ContainerStatus into the rows the API serves,
 * once per reading (src/reading.ts). Kept across readings only what cannot change: the status
 * of a running or exited container, while the runtime lists it in the state the status had
 * (kubelet's PLEG likewise inspects only the containers whose listed state changed), so a
 * reading asks ContainerStatus only of the containers that are new or changed state.
 */
export class RuntimeView {
  private readonly settled = new Map<string, ContainerEnd>();
  private readonly flights = new SingleFlight();

  /** `index`: the lists every other reader of the runtime shares (view/runtime-index.ts) */
  /** `pause`: what a yield between two slices of rows is (lib/turns; tests count them) */
  constructor(
    readonly cri: CriClient,
    private readonly index: RuntimeIndexSource,
    private readonly pause: () => Promise<unknown> = nextTurn,
  ) {}

  /** Every container with its status. */
  containers(): Promise<ContainerRow[]> {
    return this.flights.do('containers', async () => {
      const index = await this.index.index();
      return this.withStatus(index.containerList, index);
    });
  }

  pods(): Promise<PodSandbox[]> {
    return this.index.sandboxes();
  }

  /** Resolving a prefix needs only the lists; the status is fetched for the one container found. */
  async resolveContainer(prefix: string): Promise<ContainerRow> {
    const index = await this.index.index();
    const found = resolvePrefix(index.containerList, prefix, 'container');
    return (await this.withStatus([found], index))[0]!;
  }

  /** Every attempt of a container (same pod, same name), oldest first, with statuses. */
  async attemptsOf(row: Pick<Container, 'podId' | 'name'>): Promise<ContainerRow[]> {
    const index = await this.index.index();
    const same = index.containerList.filter((c) => c.podId === row.podId && c.name === row.name).sort((a, b) => a.attempt - b.attempt);
    return this.withStatus(same, index);
  }

  /** The containers of one pod sandbox, with statuses. */
  async containersOf(podId: string): Promise<ContainerRow[]> {
    const index = await this.index.index();
    return this.withStatus(index.containerList.filter((c) => c.podId === podId), index);
  }

  async resolvePod(prefix: string): Promise<PodSandbox> {
    return resolvePrefix(await this.pods(), prefix, 'pod sandbox');
  }

  private async withStatus(containers: readonly Container[], index: RuntimeIndex): Promise<ContainerRow[]> {
    for (const id of this.settled.keys()) if (!index.containers.has(id)) this.settled.delete(id);
    const statuses = await mapLimit(containers, STATUS_CONCURRENCY, (c) => this.statusOf(c));
    // 3,000 rows resumed in the tick the last status arrives: built in slices
    return mapSliced(containers, (c, i) => toRow(c, index, statuses[i]!), { maxItems: ROW_SLICE, pause: this.pause });
  }

  private async statusOf(c: Container): Promise<{ status: ContainerEnd | null; error: string | null }> {
    const kept = this.settled.get(c.id);
    if (kept && kept.state === c.state) return { status: kept, error: null };
    try {
      const status = await this.flights.do(`status:${c.id}`, () => this.cri.containerEnd(c.id));
      if (status.state === c.state && SETTLED_STATES.has(c.state)) this.settled.set(c.id, status);
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

function toRow(c: Container, index: RuntimeIndex, { status: s, error }: { status: ContainerEnd | null; error: string | null }): ContainerRow {
  const pod = index.podOf(c);
  return {
    ...c,
    podName: pod.podName ?? '',
    podNamespace: pod.podNamespace ?? '',
    podUid: pod.podUid ?? '',
    exitCode: s ? s.exitCode : null,
    reason: s ? s.reason : null,
    startedAt: s?.startedAt ?? null,
    finishedAt: s?.finishedAt ?? null,
    statusError: error,
  };
}
