/**
 * The collectors of /metrics, as node_exporter has them: each one names the scrape
 * inputs it reads and writes its own families, either into the prom-client registry
 * (small families, read inside collect() at scrape time) or as text it renders itself
 * (the per-cgroup families, ~19,000 series on a 1,000-container node). Adding a metric
 * is adding it to one collector; nothing else needs to know.
 */
import type { Registry } from 'prom-client';
import { cgroupsCollector } from './collectors/cgroups.js';
import { conntrackCollector } from './collectors/conntrack.js';
import { eventLoopCollector } from './collectors/eventloop.js';
import { kubeletCollector } from './collectors/kubelet.js';
import { kubeletFactsCollector } from './collectors/kubelet-facts.js';
import { nodeCollector } from './collectors/node.js';
import { oomCollector } from './collectors/oom.js';
import { procStatesCollector } from './collectors/proc-states.js';
import { processCollector } from './collectors/process.js';
import { runtimeCollector } from './collectors/runtime.js';
import { scrapeCollector } from './collectors/scrape.js';
import { taintCollector } from './collectors/taint.js';
import type { Deadlines } from '../deadlines.js';
import type { Scrape, ScrapeInput } from './scrape.js';

type CriObserver = (method: string, code: string, seconds: number) => void;

export interface MetricsOptions {
  /** the node this agent serves (nodetruth_info) */
  nodeName: string;
  /** how long a scrape waits for each part: deadlines(config) */
  deadlinesMs: Deadlines;
  /** hands the CRI client's call observer its sink (CRI call latency and errors) */
  observeCri?: (observer: CriObserver) => void;
  /** at most this many cgroups per scrape (MAX_CGROUP_SERIES) */
  maxCgroupSeries?: number;
}

export interface CollectorContext {
  /** prom-client families register here; the agent's registry, not the global one */
  registry: Registry;
  /** the reads of the scrape in progress */
  scrape(): Scrape;
  opts: MetricsOptions & { maxCgroupSeries: number };
  /** the inputs every collector together reads: what "did each source answer" covers */
  inputs: ReadonlySet<ScrapeInput>;
}

/** Text a collector renders itself for one scrape, written ahead of prom-client's families: a string, or its UTF-8 bytes in chunks. */
export type TextWriter = (s: Scrape) => Promise<string | readonly Buffer[]>;

export interface Collector {
  name: string;
  /** the scrape inputs it reads */
  inputs: readonly ScrapeInput[];
  register(ctx: CollectorContext): TextWriter | void;
}

/** In registration order, which is the order of the families in the text. */
export const COLLECTORS: readonly Collector[] = [
  processCollector,
  cgroupsCollector,
  runtimeCollector,
  nodeCollector,
  kubeletCollector,
  oomCollector,
  // the node facts (GET /v1/node `facts`)
  conntrackCollector,
  taintCollector,
  procStatesCollector,
  kubeletFactsCollector,
  scrapeCollector,
  eventLoopCollector,
];
