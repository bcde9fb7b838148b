/**
 * Processes in D state (uninterruptible: a dead NFS server or block device) and Z state
 * (zombies a pod's PID 1 does not reap), by pod. pod_uid comes from each process's cgroup, so
 * it stays set when the runtime does not answer; namespace and pod are the runtime's names
 * (the last list's when it is late), "" when unknown. Processes outside pods, and those past
 * the walk's attribution cap, are the series with pod_uid="". Bounded: the walk keeps at most
 * PROC_STATE_LIMITS.maxRows (pod, container, state) rows.
 */
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';
import { scalarText } from './scalar.js';

export const procStatesCollector: Collector = {
  name: 'proc-states',
  inputs: ['facts', 'index'],
  register({ registry, scrape }) {
    new Gauge({
      name: 'nodetruth_processes',
      help: 'Processes in state D (uninterruptible sleep) or Z (zombie) by pod, from /proc/<pid>/stat and /proc/<pid>/cgroup; pod_uid="": not in a pod, or not attributed (see nodetruth_processes_walk_complete).',
      labelNames: ['state', 'namespace', 'pod', 'pod_uid'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = scrape();
        const [facts, names] = await Promise.all([s.facts(), s.index()]);
        const p = facts?.processes;
        if (!p) return;
        const total = { D: p.dState, Z: p.zState };
        const attributed = { D: 0, Z: 0 };
        const rows = new Map<string, { labels: { state: string; namespace: string; pod: string; pod_uid: string }; n: number }>();
        for (const r of p.byPod) {
          if (r.podUid === null) continue; // a host process: in the pod_uid="" remainder
          attributed[r.state] += r.count;
          const k = `${r.state}/${r.podUid}`;
          const row = rows.get(k);
          if (row) row.n += r.count;
          else {
            const pod = names?.pod(r.podUid);
            rows.set(k, { labels: { state: r.state, namespace: pod?.podNamespace ?? '', pod: pod?.podName ?? '', pod_uid: r.podUid }, n: r.count });
          }
        }
        for (const { labels, n } of rows.values()) this.set(labels, n);
        // both states always: a dashboard or alert sees 0, not an absent series, on a healthy node
        for (const state of ['D', 'Z'] as const) this.set({ state, namespace: '', pod: '', pod_uid: '' }, Math.max(0, total[state] - attributed[state]));
      },
    });
    // no walk (the facts source failed): no sample rather than prom-client's 0, "incomplete"
    return async (s) => {
      const p = (await s.facts())?.processes;
      return scalarText([
        {
          name: 'nodetruth_processes_walk_complete',
          help: 'Whether the /proc walk for D/Z processes saw and attributed every process in this scrape (0: it stopped at its pid or time budget; counts are partial; /v1/node facts.processes.cut says why).',
          value: p ? (p.cut === null ? 1 : 0) : null,
        },
      ]);
    };
  },
};
