/** Node health records (GET /v1/node). */
import type { CgroupMode, Pressure } from './cgroup.js';

export interface DiskUse {
  /** host path asked for: /, /var/lib/containerd, /var/lib/kubelet */
  path: string;
  /** false when the path does not exist on the host (then every figure is null) */
  present: boolean;
  totalBytes: number | null;
  freeBytes: number | null;
  /** free for unprivileged users (what kubelet's nodefs.available uses) */
  availableBytes: number | null;
  usedBytes: number | null;
  /** availableBytes / totalBytes */
  availableRatio: number | null;
  inodesTotal: number | null;
  inodesFree: number | null;
  inodesUsed: number | null;
  /** inodesFree / inodesTotal (kubelet's nodefs.inodesFree) */
  inodesFreeRatio: number | null;
}

export interface PidUse {
  /** numeric entries in /proc */
  processes: number | null;
  /** all threads (the total in /proc/loadavg) */
  threads: number | null;
  pidMax: number | null;
  threadsMax: number | null;
  /** threads / pid_max: every thread takes a pid */
  pidRatio: number | null;
  threadsRatio: number | null;
}

export type KubeletHealth =
  | { url: string; reachable: true; ok: boolean; status: number; body: string; durationMs: number }
  | { url: string; reachable: false; ok: false; error: string; durationMs: number };

export interface NodeHealth {
  kernelRelease: string | null;
  uptimeSeconds: number | null;
  load: { load1: number; load5: number; load15: number; runnable: number } | null;
  memory: { totalBytes: number | null; availableBytes: number | null; availableRatio: number | null };
  pressure: Pressure;
  pids: PidUse;
  disks: DiskUse[];
  cgroup: CgroupMode;
  kubelet: KubeletHealth;
}
