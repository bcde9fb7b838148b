/**
 * Prometheus metrics for /metrics, in a registry of their own, from the collectors
 * of registry.ts. Values are read when Prometheus scrapes (no timers): the first
 * collector to ask for an input starts its read, the others share it.
 *
 * Cardinality is bounded: at most MAX_CGROUP_SERIES cgroups per scrape (the rest
 * counted in nodetruth_metrics_cgroups_dropped), at most MAX_OOM_SERIES label sets
 * for kernel OOM kills; CRI method and code are closed sets.
 */
import { Registry } from 'prom-client';
import { SingleFlight } from '../lib/concurrency.js';
import { MAX_CGROUP_SERIES } from './collectors/cgroups.js';
import type { Deadlines } from '../deadlines.js';
import type { MetricsInputs } from './inputs.js';
import { COLLECTORS, type Collector, type CollectorContext, type MetricsOptions, type TextWriter } from './registry.js';
import { Scrape } from './scrape.js';

const BLANK_LINE = Buffer.from('\n\n');

export class NodeMetrics {
  readonly registry = new Registry();
  private current: Scrape | null = null;
  private readonly flights = new SingleFlight();
  private readonly writers: TextWriter[] = [];
  private readonly deadlines: Deadlines;

  constructor(
    private readonly inputs: MetricsInputs,
    opts: MetricsOptions,
    collectors: readonly Collector[] = COLLECTORS,
  ) {
    this.deadlines = opts.deadlinesMs;
    const ctx: CollectorContext = {
      registry: this.registry,
      // a collect() outside metrics() (nobody does) still gets a scrape of its own
      scrape: () => this.current ?? new Scrape(this.inputs, this.deadlines),
      opts: { ...opts, maxCgroupSeries: opts.maxCgroupSeries ?? MAX_CGROUP_SERIES },
      inputs: new Set(collectors.flatMap((c) => c.inputs)),
    };
    for (const c of collectors) {
      const w = c.register(ctx);
      if (w) this.writers.push(w);
    }
  }

  /**
   * One scrape as the UTF-8 bytes of its text: every collector shares its reads; concurrent
   * scrapes share one result. The collectors' pieces are copied once, into this one Buffer.
   */
  body(): Promise<Buffer> {
    return this.flights.do('scrape', async () => {
      const s = (this.current = new Scrape(this.inputs, this.deadlines));
      try {
        const [rest, ...texts] = await Promise.all([this.registry.metrics(), ...this.writers.map((w) => w(s))]);
        const pieces: Buffer[] = [];
        for (const t of texts) pieces.push(...(typeof t === 'string' ? [Buffer.from(t)] : t), BLANK_LINE);
        pieces.push(Buffer.from(rest));
        return Buffer.concat(pieces);
      } finally {
        this.current = null;
      }
    });
  }

  /** The same scrape as text. */
  async metrics(): Promise<string> {
    return (await this.body()).toString();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
