/**
 * Kernel OOM kills, by pod and container, from the kernel log (kmsg ring; not the journal,
 * too slow for a scrape). The ring buffer wraps and forgets; the counter must not go down,
 * so kills are accumulated across scrapes, each counted once.
 */
import { Counter } from 'prom-client';
import type { RuntimeNameBook } from '../../view/runtime-index.js';
import type { AttributedOomKill } from '../../view/oom.js';
import type { Collector } from '../registry.js';

const MAX_OOM_SERIES = 500;

type OomLabels = { namespace: string; pod: string; container: string; pod_uid: string };

/** Kills seen so far and their counts by label set; at most MAX_OOM_SERIES label sets, the rest counted as overflow. */
class OomCounter {
  private readonly seen = new Set<string>();
  private readonly counts = new Map<string, { labels: OomLabels; n: number }>();
  overflow = 0;

  add(kills: readonly AttributedOomKill[], names: RuntimeNameBook | null): void {
    const current = new Set<string>();
    for (const k of kills) {
      const key = `${k.bootId ?? ''}/${k.evidence.firstSeq ?? k.monotonicUs ?? ''}/${k.pid}`;
      current.add(key);
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      // by the kernel's pod UID and container ID; names of the last list when the runtime is late
      const n = k.podUid && names ? names.of({ podUid: k.podUid, containerId: k.containerId }) : null;
      // pod_uid from the kill itself: the kernel named the cgroup even when the runtime did not answer
      const labels = { namespace: n?.podNamespace ?? '', pod: n?.podName ?? '', container: n?.sandbox ? 'POD' : (n?.containerName ?? ''), pod_uid: k.podUid ?? '' };
      const lk = JSON.stringify(labels);
      const e = this.counts.get(lk);
      if (e) e.n++;
      else if (this.counts.size < MAX_OOM_SERIES) this.counts.set(lk, { labels, n: 1 });
      else this.overflow++;
    }
    // keys of kills the kernel log no longer holds cannot come back: forget them
    for (const key of this.seen) if (!current.has(key)) this.seen.delete(key);
  }

  entries(): readonly { labels: OomLabels; n: number }[] {
    return [...this.counts.values()];
  }
}

export const oomCollector: Collector = {
  name: 'oom',
  inputs: ['oomKills', 'index'],
  register({ registry, scrape }) {
    const oom = new OomCounter();
    new Counter({
      name: 'nodetruth_kernel_oom_kills_total',
      help: `OOM kills the kernel log reported since nodetruth started reading it (the first scrape counts what the ring buffer held), by pod and container; at most ${MAX_OOM_SERIES} label sets.`,
      labelNames: ['namespace', 'pod', 'container', 'pod_uid'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = scrape();
        const [kills, index] = await Promise.all([s.oomKills(), s.index()]);
        if (kills) oom.add(kills, index);
        for (const e of oom.entries()) this.inc(e.labels, e.n);
      },
    });
  },
};
