/**
 * cAdvisor's container_* families, one series per pod and container cgroup, with its
 * names and labels so existing dashboards work; rendered as text (render.ts). Pod-level
 * OOM counts come from the pod cgroup's hierarchical memory.events, which outlives its
 * containers.
 */
import { Gauge } from 'prom-client';
import type { CgroupRecord } from '../../model/cgroup.js';
import { cgroupSeries } from '../labels.js';
import type { Collector } from '../registry.js';
import { renderCgroupChunks, type CgroupFamily } from '../render.js';

export const MAX_CGROUP_SERIES = 2000;

const usec = (n: number | null | undefined) => (n === null || n === undefined ? null : n / 1e6);

const pressure = (res: 'cpu' | 'memory' | 'io'): CgroupFamily[] => [
  {
    name: `container_pressure_${res}_waiting_seconds_total`,
    help: `Total time duration tasks in the cgroup have waited due to ${res} congestion (PSI some).`,
    kind: 'counter',
    value: (r) => usec(r.pressure[res]?.some.total),
  },
  {
    name: `container_pressure_${res}_stalled_seconds_total`,
    help: `Total time duration no tasks in the cgroup have progressed due to ${res} congestion (PSI full).`,
    kind: 'counter',
    value: (r) => usec(r.pressure[res]?.full?.total),
  },
];

export const CGROUP_FAMILIES: readonly CgroupFamily[] = [
  {
    name: 'container_memory_working_set_bytes',
    help: 'Current working set of the cgroup in bytes (memory.current - inactive_file).',
    kind: 'gauge',
    value: (r) => r.memory.workingSet,
  },
  {
    name: 'container_spec_memory_limit_bytes',
    help: 'Memory limit (memory.max) of the cgroup in bytes; 0 when unlimited.',
    kind: 'gauge',
    value: (r: CgroupRecord) => (r.memory.max === null ? null : r.memory.max === 'max' ? 0 : r.memory.max),
  },
  // cAdvisor has no memory.high series: its container_spec_memory_reservation_limit_bytes
  // was memory.high in older releases and is memory.min in current ones, so neither its
  // name nor its meaning is memory.high's. Ours, then (DESIGN.md: cAdvisor's names only
  // where the meaning is the same), named in the spec_memory family and with its labels.
  {
    name: 'nodetruth_container_spec_memory_high_bytes',
    help: 'Memory throttle limit (memory.high) of the cgroup in bytes: above it the kernel reclaims and slows allocations; 0 when unlimited.',
    kind: 'gauge',
    value: (r: CgroupRecord) => (r.memory.high === null ? null : r.memory.high === 'max' ? 0 : r.memory.high),
  },
  {
    name: 'nodetruth_container_memory_high_events_total',
    help: 'Times the cgroup went over memory.high and was reclaimed and throttled (memory.events high, hierarchical: a pod cgroup counts its containers).',
    kind: 'counter',
    value: (r) => r.memory.events?.high ?? null,
  },
  {
    name: 'container_oom_events_total',
    help: 'OOM kills in the cgroup (memory.events oom_kill, hierarchical: a pod cgroup counts its containers, dead ones included).',
    kind: 'counter',
    value: (r) => r.memory.events?.oomKill ?? null,
  },
  {
    name: 'container_cpu_usage_seconds_total',
    help: 'Cumulative CPU time consumed in seconds (cpu.stat usage_usec).',
    kind: 'counter',
    value: (r) => usec(r.cpu.usageUsec),
    extra: { cpu: 'total' },
  },
  { name: 'container_cpu_cfs_periods_total', help: 'Number of elapsed enforcement period intervals (cpu.stat nr_periods).', kind: 'counter', value: (r) => r.cpu.nrPeriods },
  { name: 'container_cpu_cfs_throttled_periods_total', help: 'Number of throttled period intervals (cpu.stat nr_throttled).', kind: 'counter', value: (r) => r.cpu.nrThrottled },
  {
    name: 'container_cpu_cfs_throttled_seconds_total',
    help: 'Total time duration the cgroup has been throttled (cpu.stat throttled_usec).',
    kind: 'counter',
    value: (r) => usec(r.cpu.throttledUsec),
  },
  ...pressure('cpu'),
  ...pressure('memory'),
  ...pressure('io'),
];

export const cgroupsCollector: Collector = {
  name: 'cgroups',
  inputs: ['cgroups', 'index'],
  register({ registry, scrape, opts }) {
    const max = opts.maxCgroupSeries;
    new Gauge({
      name: 'nodetruth_metrics_cgroups_dropped',
      help: `Cgroups left out of this scrape because the node has more than ${MAX_CGROUP_SERIES} pod and container cgroups.`,
      registers: [registry],
      async collect() {
        const s = scrape();
        const [recs, index] = await Promise.all([s.cgroups(), s.index()]);
        this.set(recs ? cgroupSeries(recs, index, max).dropped : 0);
      },
    });
    return async (s) => {
      const [recs, index] = await Promise.all([s.cgroups(), s.index()]);
      return renderCgroupChunks(CGROUP_FAMILIES, recs ? cgroupSeries(recs, index, max).series : []);
    };
  },
};
