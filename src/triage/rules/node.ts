/** The node: disk and inode use at kubelet's eviction thresholds, PID use, MemAvailable. */
import type { DiskUse } from '../../model/node.js';
import type { Finding, Severity } from '../../model/triage.js';
import { humanSize, percent } from '../../format.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import type { Rule } from './rule.js';

function diskSignal(d: DiskUse | undefined, fsName: 'nodefs' | 'imagefs', dedupe: Set<string>): Finding[] {
  if (!d || !d.present) return [];
  const out: Finding[] = [];
  const avail = fsName === 'nodefs' ? THRESHOLDS.nodefsAvailable : THRESHOLDS.imagefsAvailable;
  const inodes = fsName === 'nodefs' ? THRESHOLDS.nodefsInodesFree : THRESHOLDS.imagefsInodesFree;
  const check = (signal: string, value: number | null, threshold: number, text: string) => {
    if (value === null) return;
    const sev: Severity | null = value < threshold ? 'critical' : value < threshold + THRESHOLDS.diskWarningMargin ? 'warning' : null;
    if (!sev) return;
    const key = `${d.totalBytes}/${d.inodesTotal}/${signal.split('.')[1]}`;
    if (dedupe.has(key)) return; // nodefs and imagefs on one filesystem: say it once
    dedupe.add(key);
    out.push({
      id: 'disk-pressure',
      severity: sev,
      title: sev === 'critical' ? `${signal} below kubelet's eviction threshold on ${d.path}` : `${signal} close to kubelet's eviction threshold on ${d.path}`,
      detail: `${text} (kubelet evicts pods below ${percent(threshold)}: ${signal}<${Math.round(threshold * 100)}%)`,
      evidence: [
        {
          source: 'statfs',
          path: d.path,
          excerpt: `size ${humanSize(d.totalBytes ?? 0)}, available ${humanSize(d.availableBytes ?? 0)} (${percent(d.availableRatio ?? 0)}); inodes ${d.inodesTotal}, free ${d.inodesFree} (${percent(d.inodesFreeRatio ?? 0)})`,
        },
      ],
      hint:
        fsName === 'imagefs'
          ? 'Free image space: unused images (crictl rmi --prune, or let kubelet image GC run), and large container writable layers.'
          : 'Free space under /var/lib/kubelet and /var/log: large emptyDir volumes, container logs (/var/log/pods), the journal (journalctl --vacuum-size).',
    });
  };
  check(`${fsName}.available`, d.availableRatio, avail, `${percent(d.availableRatio ?? 0)} available (${humanSize(d.availableBytes ?? 0)} of ${humanSize(d.totalBytes ?? 0)})`);
  check(`${fsName}.inodesFree`, d.inodesFreeRatio, inodes, `${percent(d.inodesFreeRatio ?? 0)} of inodes free (${d.inodesFree} of ${d.inodesTotal})`);
  return out;
}

export const nodeRule: Rule = {
  name: 'node',
  ids: idsOf('node'),
  run(s) {
    if (!s.host.ok) return [];
    const h = s.host.value;
    // a path not on the host falls back to / (what holds it then); a disk not read concludes nothing
    const disk = (p: string) => {
      const d = h.disks.find((x) => x.path === p);
      return d === undefined || d.present === false ? h.disks.find((x) => x.path === '/' && x.present) : d.present ? d : undefined;
    };
    const dedupe = new Set<string>();
    const out: Finding[] = [
      ...diskSignal(disk('/var/lib/kubelet'), 'nodefs', dedupe),
      ...diskSignal(disk('/var/lib/containerd'), 'imagefs', dedupe),
    ];
    const r = h.pids.pidRatio;
    if (r !== null && r >= THRESHOLDS.pidUseWarning) {
      out.push({
        id: 'pid-pressure',
        severity: r >= THRESHOLDS.pidUseCritical ? 'critical' : 'warning',
        title: `${percent(r)} of the node's PIDs are in use`,
        detail: `${h.pids.threads} threads (${h.pids.processes} processes) against kernel.pid_max ${h.pids.pidMax}: new processes and threads will fail with EAGAIN`,
        evidence: [
          { source: 'proc', path: '/proc/loadavg', excerpt: `${h.pids.threads} threads` },
          { source: 'proc', path: '/proc/sys/kernel/pid_max', excerpt: String(h.pids.pidMax) },
        ],
        hint: 'Find the pod that forks without bound (GET /v1/cgroups lists pids.current per cgroup) and set pod PID limits (kubelet --pod-max-pids).',
      });
    }
    const avail = h.memory.availableBytes;
    if (avail !== null && avail < THRESHOLDS.memoryAvailableBytes) {
      out.push({
        id: 'memory-pressure',
        severity: 'critical',
        title: 'The node is below kubelet\'s memory eviction threshold',
        detail: `MemAvailable ${humanSize(avail)} of ${humanSize(h.memory.totalBytes ?? 0)} (kubelet evicts pods below memory.available<${THRESHOLDS.memoryAvailableBytes / 2 ** 20}Mi)`,
        evidence: [{ source: 'proc', path: '/proc/meminfo', excerpt: `MemTotal ${h.memory.totalBytes} MemAvailable ${avail}` }],
        hint: 'Pods will be evicted (BestEffort first); find the biggest users with GET /v1/cgroups?sort=memory.',
      });
    }
    return out;
  },
};
