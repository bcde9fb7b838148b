import type { Container, ContainerStatus, PodSandbox } from '../model/runtime.js';
import { isSourceError, RUNTIME_DOWN } from '../readers/errors.js';
import { mapLimit, SingleFlight } from '../lib/concurrency.js';
import { mapSliced, nextTurn, TurnQueue } from '../lib/turns.js';
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
/**
 * The callers of a containers() flight, one a turn: no budget shared in a turn, since each one's
 * work (its route's filter, sort and render) comes after it resumes, where a budget cannot see it.
 */
const CALLERS = new TurnQueue(0);
/** Rows built between two yields at most (fewer when they take longer than lib/turns' SLICE_MS). */
export const ROW_SLICE = 500;
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
  /** Drops live statuses once they expire: they are never served again, only fetched anew. */
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly flights = new SingleFlight();

  /** `index`: the lists every other reader of the runtime shares (view/runtime-index.ts) */
  /** `pause`: what a yield between two slices of rows is (lib/turns; tests count them); `resume`: the wait of a flight's callers */
  constructor(
    readonly cri: CriClient,
    private readonly index: RuntimeIndexSource,
    private readonly pause: () => Promise<unknown> = nextTurn,
    private readonly resume: () => Promise<unknown> = CALLERS.next,
  ) {}

  /** Every container with its status: one ContainerStatus per container not in the cache. */
  async containers(): Promise<ContainerRow[]> {
    const rows = await this.flights.do('containers', async () => {
      const index = await this.index.index();
      for (const id of this.statusCache.keys()) if (!index.containers.has(id)) this.statusCache.delete(id);
      return this.withStatus(index.containerList, index);
    });
    // every caller of a flight resumes in the tick it settles, and each filters, sorts and renders
    // its 3,000 rows: ten requests of /v1/containers hold the loop ~50 ms at once. One a turn.
    await this.resume();
    return rows;
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
    const statuses = await mapLimit(containers, STATUS_CONCURRENCY, (c) => this.cachedStatus(c));
    // 3,000 rows resumed in the tick the last status arrives: built in slices
    return mapSliced(containers, (c, i) => toRow(c, index, statuses[i]!), { maxItems: ROW_SLICE, pause: this.pause });
  }

  /**
   * A running container's status older than LIVE_STATUS_TTL_MS is only ever replaced, so it is
   * dropped: kept until the container leaves the list, they hold ~1.3 MiB of an idle agent's
   * live heap at 1,000 containers, growing with the node (bench/RESULTS.md, "idle RSS after a round").
   */
  private sweepLater(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = undefined;
      const now = Date.now();
      let live = false;
      for (const [id, hit] of this.statusCache) {
        if (hit.state === 'CONTAINER_EXITED') continue;
        if (now - hit.at >= LIVE_STATUS_TTL_MS) this.statusCache.delete(id);
        else live = true;
      }
      if (live) this.sweepLater();
    }, LIVE_STATUS_TTL_MS);
    this.sweepTimer.unref();
  }

  private async cachedStatus(c: Container): Promise<{ status: ContainerStatus | null; error: string | null }> {
    const hit = this.statusCache.get(c.id);
    const now = Date.now();
    if (hit && hit.state === c.state && (c.state === 'CONTAINER_EXITED' || now - hit.at < LIVE_STATUS_TTL_MS)) return { status: hit.status, error: null };
    try {
      // a status call in flight for this container (another request's) is shared, not repeated
      const status = await this.flights.do(`status:${c.id}`, () => this.cri.containerStatus(c.id, false));
      this.statusCache.set(c.id, { state: c.state, at: now, status });
      if (c.state !== 'CONTAINER_EXITED') this.sweepLater();
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

function toRow(c: Container, index: RuntimeIndex, { status: s, error }: { status: ContainerStatus | null; error: string | null }): ContainerRow {
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
