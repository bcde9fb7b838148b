/** The node's PID and disk headroom, as the kubelet's eviction thresholds see them. */
import { Gauge } from 'prom-client';
import type { DiskUse } from '../../model/node.js';
import type { Collector } from '../registry.js';

export const nodeCollector: Collector = {
  name: 'node',
  inputs: ['pids', 'disks'],
  register({ registry, scrape }) {
    new Gauge({
      name: 'nodetruth_node_pid_use_ratio',
      help: 'Threads (each takes a PID) over kernel.pid_max.',
      registers: [registry],
      async collect() {
        this.reset();
        const p = await scrape().pids();
        if (p?.pidRatio !== null && p?.pidRatio !== undefined) this.set(p.pidRatio);
      },
    });
    const diskGauge = (name: string, help: string, pick: (d: DiskUse) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['path'],
        registers: [registry],
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
  },
};
