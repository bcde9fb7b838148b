/**
 * The reads of one scrape: each input is started on first use, within its part's
 * deadline (deadlines.ts), and shared by every collector that asks for it; a source is up in this
 * scrape only if every read of it answered in time. No timers between scrapes.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { NodeFacts } from '../model/node.js';
import type { RuntimeStatus } from '../model/runtime.js';
import type { RuntimeNameBook } from '../view/runtime-index.js';
import type { AttributedOomKill } from '../view/oom.js';
import type { Deadlines } from '../deadlines.js';
import { type Outcome, withinDeadline } from '../lib/deadline.js';
import type { MetricsInputs, RuntimeLists } from './inputs.js';

/** The sources a scrape reports on (nodetruth_scrape_source_up{source}); each covers one or more inputs. */
export type MetricsSource = 'runtime' | 'cgroups' | 'node' | 'kubelet' | 'kernel' | 'facts';

/** What a collector may read in a scrape; it names the ones it uses (Collector.inputs). */
export type ScrapeInput = 'status' | 'lists' | 'index' | 'cgroups' | 'pids' | 'disks' | 'kubelet' | 'oomKills' | 'facts';

export class Scrape {
  /** per source, the worst of its reads in this scrape (a failure over an answer), and the longest time */
  readonly outcomes = new Map<MetricsSource, Outcome<unknown>>();
  /** items a source skipped in this scrape (an unreadable cgroup, a node file that is a directory): their series are missing */
  readonly skipped = new Map<MetricsSource, number>();
  private readonly memo = new Map<ScrapeInput, Promise<unknown>>();

  constructor(
    private readonly inputs: MetricsInputs,
    private readonly deadlines: Deadlines,
  ) {}

  private read<T>(key: ScrapeInput, source: MetricsSource, part: keyof Deadlines, fn: () => Promise<T>): Promise<T | null> {
    let p = this.memo.get(key) as Promise<T | null> | undefined;
    if (!p) {
      p = withinDeadline(fn, this.deadlines[part], source).then((o) => {
        this.record(source, o);
        return o.ok ? o.value : null;
      });
      this.memo.set(key, p);
    }
    return p;
  }

  private record(source: MetricsSource, o: Outcome<unknown>): void {
    const prev = this.outcomes.get(source);
    // the value is not kept: the memo holds it for the collectors, this map only what the source did
    const worst = prev && !prev.ok ? prev : o.ok ? { ok: true as const, value: null, ms: o.ms } : o;
    this.outcomes.set(source, { ...worst, ms: Math.max(prev?.ms ?? 0, o.ms) });
  }

  status = () => this.read<RuntimeStatus | null>('status', 'runtime', 'runtimeStatus', () => this.inputs.runtimeStatus());
  lists = () => this.read<RuntimeLists | null>('lists', 'runtime', 'runtimeLists', () => this.inputs.runtimeLists());
  /** this scrape's lists' names, or the last successful list's when the runtime is late: series keep their names */
  index = () => this.read<RuntimeNameBook>('index', 'runtime', 'runtimeLists', async () => this.inputs.names(await this.lists()));
  /** `fn` with a warnings list; what it skipped is counted under `source` */
  private counted<T>(source: MetricsSource, fn: (warnings: string[]) => Promise<T>): () => Promise<T> {
    return async () => {
      const warnings: string[] = [];
      try {
        return await fn(warnings);
      } finally {
        this.skipped.set(source, (this.skipped.get(source) ?? 0) + new Set(warnings).size);
      }
    };
  }

  // read unnamed: labels.ts joins each series' names from index() itself, so the cgroup reads
  // start at once instead of after the runtime's lists (~50 ms of 1,000 containers over gRPC)
  cgroups = () => this.read<CgroupRecord[]>('cgroups', 'cgroups', 'cgroups', this.counted('cgroups', (w) => this.inputs.cgroups(w)));
  pids = () => this.read('pids', 'node', 'nodeUse', this.counted('node', (w) => this.inputs.pids(w)));
  disks = () => this.read('disks', 'node', 'nodeUse', this.counted('node', (w) => this.inputs.disks(w)));
  kubelet = () => this.read('kubelet', 'kubelet', 'kubeletHealthz', () => this.inputs.kubelet());
  oomKills = () => this.read<AttributedOomKill[]>('oomKills', 'kernel', 'kmsgRing', () => this.inputs.oomKills());
  /** against this scrape's disks (statfs made once); a node source that failed leaves the eviction checks empty */
  facts = () => this.read<NodeFacts>('facts', 'facts', 'nodeFacts', this.counted('facts', (w) => this.inputs.facts(this.disks().then((d) => d ?? []), w)));

  /** every input in `which` read (or past its deadline) */
  async all(which: Iterable<ScrapeInput>): Promise<void> {
    await Promise.all([...which].map((k) => this[k]()));
  }
}
