/**
 * Prometheus metrics for /metrics, in a registry of their own. Values are read
 * when Prometheus scrapes, inside each metric's collect() (no timers): the
 * first collect() of a scrape starts the reads it needs, the others share them.
 *
 * cAdvisor names and labels (namespace, pod, container, id, image) so existing
 * dashboards work, plus pod_uid, which stays set when the runtime (and with it
 * every name) is unreachable. Pod cgroups are series of their own with
 * container="" (as cAdvisor does); a pod's sandbox (pause) container is
 * container="POD". `id` is the cgroup path, as in cAdvisor.
 *
 * Cardinality is bounded: at most MAX_CGROUP_SERIES cgroups per scrape (pods
 * first, then containers in path order; the rest are counted in
 * nodetruth_metrics_cgroups_dropped), at most MAX_OOM_SERIES label sets for
 * kernel OOM kills; CRI method and code are closed sets.
 */
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';
import client, { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CgroupRecord } from '../model/cgroup.js';
import type { RuntimeStatus } from '../model/runtime.js';
import type { RuntimeIndex } from '../sources/cgroup/names.js';
import type { AttributedOomKill } from '../sources/oom/oom.js';
import { SingleFlight } from '../util/concurrency.js';
import { indexFrom, SOURCE_DEADLINES_MS, type MetricsInputs, type MetricsSource, type RuntimeLists } from './inputs.js';

/**
 * One delay monitor per process (it is the process's event loop), started with the first
 * NodeMetrics and never reset: a stall an hour ago still shows, whoever scraped since.
 */
let loopDelay: ELDHistogram | null = null;
function eventLoopDelay(): ELDHistogram {
  if (!loopDelay) {
    loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
  }
  return loopDelay;
}

export const MAX_CGROUP_SERIES = 2000;
export const MAX_OOM_SERIES = 500;
export const CRI_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const CONTAINER_LABELS = ['namespace', 'pod', 'container', 'id', 'image', 'pod_uid'] as const;
type ContainerLabels = Record<(typeof CONTAINER_LABELS)[number], string>;

class SourceTimeout extends Error {}

function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SourceTimeout(`${what}: no answer within ${ms} ms`)), ms);
  });
  p.catch(() => {}); // may settle after the deadline
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

interface Outcome {
  ok: boolean;
  seconds: number;
  error: string | null;
}

/** The reads of one scrape: each started on first use, with its deadline, shared by every collect(). */
class Scrape {
  readonly outcomes = new Map<MetricsSource, Outcome>();
  private readonly memo = new Map<string, Promise<unknown>>();

  constructor(private readonly inputs: MetricsInputs) {}

  private read<T>(key: string, source: MetricsSource, fn: () => Promise<T>): Promise<T | null> {
    let p = this.memo.get(key) as Promise<T | null> | undefined;
    if (!p) {
      const t0 = performance.now();
      p = withDeadline(fn(), SOURCE_DEADLINES_MS[source], source).then(
        (v) => {
          this.record(source, { ok: true, seconds: (performance.now() - t0) / 1000, error: null });
          return v;
        },
        (err: Error) => {
          this.record(source, { ok: false, seconds: (performance.now() - t0) / 1000, error: err.message });
          return null;
        },
      );
      this.memo.set(key, p);
    }
    return p;
  }

  /** a source is up only if every read of it in this scrape succeeded */
  private record(source: MetricsSource, o: Outcome): void {
    const prev = this.outcomes.get(source);
    this.outcomes.set(source, prev ? { ok: prev.ok && o.ok, seconds: Math.max(prev.seconds, o.seconds), error: prev.error ?? o.error } : o);
  }

  status = () => this.read<RuntimeStatus | null>('status', 'runtime', () => this.inputs.runtimeStatus());
  lists = () => this.read<RuntimeLists | null>('lists', 'runtime', () => this.inputs.runtimeLists());
  index = () => this.read<RuntimeIndex | null>('index', 'runtime', async () => indexFrom(await this.lists()));
  cgroups = () => this.read<CgroupRecord[]>('cgroups', 'cgroups', () => this.inputs.cgroups(this.index()));
  pids = () => this.read('pids', 'node', () => this.inputs.pids());
  disks = () => this.read('disks', 'node', () => this.inputs.disks());
  kubelet = () => this.read('kubelet', 'kubelet', () => this.inputs.kubelet());
  oomKills = () => this.read<AttributedOomKill[]>('oom', 'kernel', () => this.inputs.oomKills());

  async all(): Promise<void> {
    await Promise.all([this.status(), this.lists(), this.cgroups(), this.pids(), this.disks(), this.kubelet(), this.oomKills()]);
  }
}

interface Series {
  labels: ContainerLabels;
  rec: CgroupRecord;
}

interface CgroupFamily {
  name: string;
  help: string;
  kind: 'gauge' | 'counter';
  value: (r: CgroupRecord) => number | null;
  extra: Record<string, string>;
}

/** prom-client's escaping (registry.js escapeString / escapeLabelValue). */
const escapeText = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (s: string) => escapeText(s).replace(/"/g, '\\"');

/**
 * The per-cgroup families in the Prometheus text format exactly as prom-client
 * writes it: HELP, TYPE, one line per series (labels in CONTAINER_LABELS order,
 * then the family's own), blocks separated by a blank line. Each cgroup's label
 * text is built once for all families. Values that are absent or not finite are
 * left out, and so are negative counter values (prom-client refuses them).
 */
function renderCgroupFamilies(families: readonly CgroupFamily[], series: readonly Series[]): string {
  const labelText = series.map(({ labels }) => CONTAINER_LABELS.map((k) => `${k}="${escapeLabel(labels[k])}"`).join(','));
  const blocks: string[] = [];
  for (const f of families) {
    const extra = Object.entries(f.extra)
      .map(([k, v]) => `,${k}="${escapeLabel(v)}"`)
      .join('');
    const lines = [`# HELP ${f.name} ${escapeText(f.help)}`, `# TYPE ${f.name} ${f.kind}`];
    for (let i = 0; i < series.length; i++) {
      const v = f.value(series[i]!.rec);
      if (v === null || !Number.isFinite(v) || (f.kind === 'counter' && v < 0)) continue;
      lines.push(`${f.name}{${labelText[i]}${extra}} ${v}`);
    }
    blocks.push(lines.join('\n'));
  }
  return blocks.join('\n\n');
}

/**
 * seriesOf for one scrape's records: every per-cgroup family asks for the same
 * label sets, so they are built (and the paths sorted) once per scrape, not
 * once per family (13 times 1,450 cgroups on a 1,000-container node).
 */
const seriesMemo = new WeakMap<CgroupRecord[], { index: RuntimeIndex | null; max: number; out: { series: Series[]; dropped: number } }>();
function seriesOf(records: CgroupRecord[], index: RuntimeIndex | null, max: number): { series: Series[]; dropped: number } {
  const hit = seriesMemo.get(records);
  if (hit && hit.index === index && hit.max === max) return hit.out;
  const out = buildSeries(records, index, max);
  seriesMemo.set(records, { index, max, out });
  return out;
}

/** cgroups → label sets, capped. */
function buildSeries(records: CgroupRecord[], index: RuntimeIndex | null, max: number): { series: Series[]; dropped: number } {
  const pods = records.filter((r) => r.kind === 'pod');
  const containers = records.filter((r) => r.kind === 'container').sort((a, b) => a.path.localeCompare(b.path));
  const kept = [...pods, ...containers].slice(0, max);
  const series = kept.map((rec) => {
    const c = rec.containerId ? index?.containers.get(rec.containerId) : undefined;
    const container = rec.kind === 'pod' ? '' : rec.sandbox ? 'POD' : (rec.containerName ?? '');
    return {
      rec,
      labels: {
        namespace: rec.podNamespace ?? '',
        pod: rec.podName ?? '',
        container,
        id: rec.path,
        image: c?.image ?? '',
        pod_uid: rec.podUid,
      },
    };
  });
  return { series, dropped: records.length - kept.length };
}

const usec = (n: number | null | undefined) => (n === null || n === undefined ? null : n / 1e6);

/** Kernel OOM kills accumulated across scrapes: a counter that never goes down when the ring buffer wraps. */
class OomCounter {
  private readonly seen = new Set<string>();
  private readonly counts = new Map<string, { labels: Record<string, string>; n: number }>();
  overflow = 0;

  add(kills: AttributedOomKill[], index: RuntimeIndex | null): void {
    const current = new Set<string>();
    for (const k of kills) {
      const key = `${k.bootId ?? ''}/${k.evidence.firstSeq ?? k.monotonicUs ?? ''}/${k.pid}`;
      current.add(key);
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      const pod = k.podUid ? index?.podsByUid.get(k.podUid) : undefined;
      const c = k.containerId ? index?.containers.get(k.containerId) : undefined;
      const sandbox = k.containerId ? index?.sandboxes.get(k.containerId) : undefined;
      const labels = {
        namespace: pod?.namespace ?? c?.labels['io.kubernetes.pod.namespace'] ?? '',
        pod: pod?.name ?? c?.labels['io.kubernetes.pod.name'] ?? '',
        container: sandbox ? 'POD' : (c?.name ?? ''),
        pod_uid: k.podUid ?? '',
      };
      const lk = JSON.stringify(labels);
      const e = this.counts.get(lk);
      if (e) e.n++;
      else if (this.counts.size < MAX_OOM_SERIES) this.counts.set(lk, { labels, n: 1 });
      else this.overflow++;
    }
    // keys of kills the kernel log no longer holds cannot come back: forget them
    for (const key of this.seen) if (!current.has(key)) this.seen.delete(key);
  }

  entries() {
    return [...this.counts.values()];
  }
}

export class NodeMetrics {
  readonly registry = new Registry();
  private current: Scrape | null = null;
  private readonly flights = new SingleFlight();
  private readonly cgroupFamilies: CgroupFamily[] = [];
  private readonly maxSeries: number;
  private readonly oom = new OomCounter();

  constructor(
    private readonly inputs: MetricsInputs,
    opts: { nodeName: string; observeCri?: (observer: (method: string, code: string, seconds: number) => void) => void; maxCgroupSeries?: number },
  ) {
    const reg = [this.registry];
    const maxSeries = opts.maxCgroupSeries ?? MAX_CGROUP_SERIES;
    this.maxSeries = maxSeries;
    const scrape = () => this.current ?? new Scrape(this.inputs);
    this.registry.setDefaultLabels({});
    client.collectDefaultMetrics({ register: this.registry, prefix: 'nodetruth_' });
    // gauges named *_total trip promtool's lint; the same counts are there by type without the suffix
    for (const n of ['active_handles_total', 'active_requests_total', 'active_resources_total']) this.registry.removeSingleMetric(`nodetruth_nodejs_${n}`);

    // ---- cAdvisor-compatible, per pod and container cgroup ----
    // Rendered by renderCgroupFamilies, not through prom-client: 13 families x 1,450 cgroups on a
    // 1,000-container node are ~19,000 series, and prom-client's per-series label hashing and
    // formatting were the largest part of a scrape (issue 8). Same text format, same order.
    const perCgroup = (
      name: string,
      help: string,
      kind: 'gauge' | 'counter',
      value: (r: CgroupRecord) => number | null,
      extra: Record<string, string> = {},
    ) => {
      this.cgroupFamilies.push({ name, help, kind, value, extra });
    };

    perCgroup('container_memory_working_set_bytes', 'Current working set of the cgroup in bytes (memory.current - inactive_file).', 'gauge', (r) => r.memory.workingSet);
    perCgroup('container_spec_memory_limit_bytes', 'Memory limit (memory.max) of the cgroup in bytes; 0 when unlimited.', 'gauge', (r) =>
      r.memory.max === null ? null : r.memory.max === 'max' ? 0 : r.memory.max,
    );
    perCgroup(
      'container_oom_events_total',
      'OOM kills in the cgroup (memory.events oom_kill, hierarchical: a pod cgroup counts its containers, dead ones included).',
      'counter',
      (r) => r.memory.events?.oomKill ?? null,
    );
    perCgroup('container_cpu_usage_seconds_total', 'Cumulative CPU time consumed in seconds (cpu.stat usage_usec).', 'counter', (r) => usec(r.cpu.usageUsec), { cpu: 'total' });
    perCgroup('container_cpu_cfs_periods_total', 'Number of elapsed enforcement period intervals (cpu.stat nr_periods).', 'counter', (r) => r.cpu.nrPeriods);
    perCgroup('container_cpu_cfs_throttled_periods_total', 'Number of throttled period intervals (cpu.stat nr_throttled).', 'counter', (r) => r.cpu.nrThrottled);
    perCgroup('container_cpu_cfs_throttled_seconds_total', 'Total time duration the cgroup has been throttled (cpu.stat throttled_usec).', 'counter', (r) => usec(r.cpu.throttledUsec));
    for (const res of ['cpu', 'memory', 'io'] as const) {
      perCgroup(
        `container_pressure_${res}_waiting_seconds_total`,
        `Total time duration tasks in the cgroup have waited due to ${res} congestion (PSI some).`,
        'counter',
        (r) => usec(r.pressure[res]?.some.total),
      );
      perCgroup(
        `container_pressure_${res}_stalled_seconds_total`,
        `Total time duration no tasks in the cgroup have progressed due to ${res} congestion (PSI full).`,
        'counter',
        (r) => usec(r.pressure[res]?.full?.total),
      );
    }

    // ---- nodetruth's own ----
    new Gauge({
      name: 'nodetruth_metrics_cgroups_dropped',
      help: `Cgroups left out of this scrape because the node has more than ${MAX_CGROUP_SERIES} pod and container cgroups.`,
      registers: reg,
      async collect() {
        const s = scrape();
        const [recs, index] = await Promise.all([s.cgroups(), s.index()]);
        this.set(recs ? seriesOf(recs, index, maxSeries).dropped : 0);
      },
    });

    const condition = (type: string) =>
      async function (this: Gauge) {
        const st = await scrape().status();
        this.set(st?.conditions.find((c) => c.type === type)?.status ? 1 : 0);
      };
    new Gauge({
      name: 'nodetruth_runtime_up',
      help: 'Whether the container runtime answered CRI Status within its deadline.',
      registers: reg,
      async collect() {
        this.set((await scrape().status()) ? 1 : 0);
      },
    });
    new Gauge({ name: 'nodetruth_runtime_ready', help: 'CRI RuntimeReady condition (0 also when the runtime does not answer).', registers: reg, collect: condition('RuntimeReady') });
    new Gauge({ name: 'nodetruth_network_ready', help: 'CRI NetworkReady condition: the CNI plugin is initialized (0 also when the runtime does not answer).', registers: reg, collect: condition('NetworkReady') });

    const criDuration = new Histogram({
      name: 'nodetruth_cri_call_duration_seconds',
      help: 'Duration of CRI calls nodetruth made, by method and gRPC status code.',
      labelNames: ['method', 'code'],
      buckets: CRI_BUCKETS,
      registers: reg,
    });
    const criErrors = new Counter({
      name: 'nodetruth_cri_errors_total',
      help: 'CRI calls that did not return OK, by method and gRPC status code (DEADLINE_EXCEEDED: the runtime did not answer in time).',
      labelNames: ['method', 'code'],
      registers: reg,
    });
    opts.observeCri?.((method, code, seconds) => {
      criDuration.observe({ method, code }, seconds);
      if (code !== 'OK') criErrors.inc({ method, code });
    });

    new Gauge({
      name: 'nodetruth_container_attempt',
      help: "The newest attempt (restart count) of each container the runtime lists, by pod and container name.",
      labelNames: ['namespace', 'pod', 'container', 'pod_uid'],
      registers: reg,
      async collect() {
        this.reset();
        const lists = await scrape().lists();
        if (!lists) return;
        const pods = new Map(lists.sandboxes.map((p) => [p.id, p]));
        const max = new Map<string, { labels: Record<string, string>; attempt: number }>();
        for (const c of lists.containers) {
          const p = pods.get(c.podId);
          const labels = {
            namespace: p?.namespace ?? c.labels['io.kubernetes.pod.namespace'] ?? '',
            pod: p?.name ?? c.labels['io.kubernetes.pod.name'] ?? '',
            container: c.name,
            pod_uid: p?.uid ?? c.labels['io.kubernetes.pod.uid'] ?? '',
          };
          const k = JSON.stringify(labels);
          const prev = max.get(k);
          if (!prev || c.attempt > prev.attempt) max.set(k, { labels, attempt: c.attempt });
        }
        for (const { labels, attempt } of [...max.values()].slice(0, maxSeries)) this.set(labels, attempt);
      },
    });

    new Gauge({
      name: 'nodetruth_node_pid_use_ratio',
      help: 'Threads (each takes a PID) over kernel.pid_max.',
      registers: reg,
      async collect() {
        this.reset();
        const p = await scrape().pids();
        if (p?.pidRatio !== null && p?.pidRatio !== undefined) this.set(p.pidRatio);
      },
    });
    const diskGauge = (name: string, help: string, pick: (d: { availableRatio: number | null; inodesFreeRatio: number | null }) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['path'],
        registers: reg,
        async collect() {
          this.reset();
          for (const d of (await scrape().disks()) ?? []) {
            const v = d.present ? pick(d) : null;
            if (v !== null) this.set({ path: d.path }, v);
          }
        },
      });
    diskGauge('nodetruth_node_disk_available_ratio', 'Available bytes over size of the filesystem holding the path (kubelet nodefs/imagefs.available).', (d) => d.availableRatio);
    diskGauge('nodetruth_node_disk_inodes_free_ratio', 'Free inodes over inodes of the filesystem holding the path (kubelet nodefs.inodesFree).', (d) => d.inodesFreeRatio);

    new Gauge({
      name: 'nodetruth_kubelet_healthz_up',
      help: "Whether kubelet's healthz endpoint answered 200.",
      registers: reg,
      async collect() {
        const k = await scrape().kubelet();
        this.set(k?.ok ? 1 : 0);
      },
    });

    const oom = this.oom;
    new Counter({
      name: 'nodetruth_kernel_oom_kills_total',
      help: `OOM kills the kernel log reported since nodetruth started reading it (the first scrape counts what the ring buffer held), by pod and container; at most ${MAX_OOM_SERIES} label sets.`,
      labelNames: ['namespace', 'pod', 'container', 'pod_uid'],
      registers: reg,
      async collect() {
        this.reset();
        const s = scrape();
        const [kills, index] = await Promise.all([s.oomKills(), s.index()]);
        if (kills) oom.add(kills, index);
        for (const e of oom.entries()) this.inc(e.labels, e.n);
      },
    });

    new Gauge({
      name: 'nodetruth_scrape_source_up',
      help: 'Whether each source answered within its deadline in this scrape (runtime, cgroups, node, kubelet, kernel).',
      labelNames: ['source'],
      registers: reg,
      async collect() {
        this.reset();
        const s = scrape();
        await s.all();
        for (const [source, o] of s.outcomes) this.set({ source }, o.ok ? 1 : 0);
      },
    });
    new Gauge({
      name: 'nodetruth_scrape_source_duration_seconds',
      help: 'How long each source took in this scrape.',
      labelNames: ['source'],
      registers: reg,
      async collect() {
        this.reset();
        const s = scrape();
        await s.all();
        for (const [source, o] of s.outcomes) this.set({ source }, Math.round(o.seconds * 1e6) / 1e6);
      },
    });
    const loop = eventLoopDelay();
    new Gauge({
      name: 'nodetruth_eventloop_delay_max_seconds',
      help: 'Longest event-loop delay since the agent started (perf_hooks.monitorEventLoopDelay at 10 ms resolution: about 0.01 means no delay). Never reset, unlike nodetruth_nodejs_eventloop_lag_max_seconds, which covers only the time since the previous scrape of anyone.',
      registers: reg,
      collect() {
        this.set(loop.max / 1e9);
      },
    });
    new Gauge({
      name: 'nodetruth_info',
      help: 'Constant 1, labelled with the node name nodetruth serves.',
      labelNames: ['node'],
      registers: reg,
      collect() {
        this.set({ node: opts.nodeName }, 1);
      },
    });
  }

  /** One scrape: every collect() shares its reads; concurrent scrapes share one result. */
  metrics(): Promise<string> {
    return this.flights.do('scrape', async () => {
      const s = (this.current = new Scrape(this.inputs));
      try {
        const [rest, recs, index] = await Promise.all([this.registry.metrics(), s.cgroups(), s.index()]);
        return `${renderCgroupFamilies(this.cgroupFamilies, recs ? seriesOf(recs, index, this.maxSeries).series : [])}\n\n${rest}`;
      } finally {
        this.current = null;
      }
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
