/**
 * The conntrack table, under node_exporter's names and help: the meaning is the same
 * (nf_conntrack_count and nf_conntrack_max), so its alerts and dashboards work on ours. A full
 * table drops new connections silently; the kernel log says so only once per burst.
 * The count is of the agent's network namespace: the host's with hostNetwork (the DaemonSet's).
 * No nf_conntrack module: no samples, as node_exporter (not 0 of 0).
 */
import type { Collector } from '../registry.js';
import { scalarText } from './scalar.js';

export const conntrackCollector: Collector = {
  name: 'conntrack',
  inputs: ['facts'],
  register() {
    return async (s) => {
      const c = (await s.facts())?.conntrack;
      const loaded = c?.loaded ? c : null;
      return scalarText([
        { name: 'node_nf_conntrack_entries', help: 'Number of currently allocated flow entries for connection tracking.', value: loaded?.entries },
        { name: 'node_nf_conntrack_entries_limit', help: 'Maximum size of connection tracking table.', value: loaded?.limit },
      ]);
    };
  },
};
