/**
 * cgroup v2 records, shared by the cgroup routes, metrics and triage.
 *
 * Two kinds of "no number", kept apart on purpose:
 * - `null`   the file is not there (its controller is not enabled for this cgroup,
 *            or the kernel is too old to have it) or a key is missing from it;
 * - `'max'`  the kernel's own word for "no limit", kept as the string "max"
 *            exactly as the file says it (memory.max, memory.high, memory.swap.max,
 *            pids.max, cpu.max quota); compare with 'max' before any arithmetic.
 */
export type QosClass = 'guaranteed' | 'burstable' | 'besteffort';
export type CgroupDriver = 'systemd' | 'cgroupfs';
type CgroupVersion = 'v2' | 'hybrid' | 'v1' | 'unknown';

/** A limit as cgroup v2 writes it: a number, or the string "max" meaning unlimited. */
export type Limit = number | 'max';

export interface PsiLine {
  /** percent of wall time, averaged over 10/60/300 s */
  avg10: number;
  avg60: number;
  avg300: number;
  /** total stall time in microseconds */
  total: number;
}

export interface Psi {
  some: PsiLine;
  /** absent for the root cpu.pressure on kernels before 5.13 */
  full: PsiLine | null;
}

export interface Pressure {
  cpu: Psi | null;
  memory: Psi | null;
  io: Psi | null;
}

/** memory.events / memory.events.local */
export interface MemoryEvents {
  low: number | null;
  high: number | null;
  max: number | null;
  oom: number | null;
  oomKill: number | null;
  /** since Linux 5.17 */
  oomGroupKill: number | null;
}

export interface MemoryStats {
  current: number | null;
  max: Limit | null;
  /**
   * memory.high, the throttle limit: above it the kernel reclaims and slows the cgroup's
   * allocations, never OOM-kills. "max" (the default) unless set: kubelet sets it only with
   * the MemoryQoS feature gate, to request + memoryThrottlingFactor × (limit − request) in
   * whole pages (node allocatable where there is no limit).
   */
  high: Limit | null;
  peak: number | null;
  swapCurrent: number | null;
  swapMax: Limit | null;
  /** hierarchical: counts this cgroup and every descendant, including dead ones */
  events: MemoryEvents | null;
  /** this cgroup only */
  eventsLocal: MemoryEvents | null;
  /** from memory.stat */
  anon: number | null;
  file: number | null;
  activeFile: number | null;
  inactiveFile: number | null;
  shmem: number | null;
  /** current - inactive_file, floored at 0: cAdvisor's container_memory_working_set_bytes */
  workingSet: number | null;
}

export interface CpuMax {
  quotaUsec: Limit;
  periodUsec: number;
  /** quota / period; "max" when there is no quota */
  quotaCores: number | 'max';
}

export interface CpuStats {
  usageUsec: number | null;
  userUsec: number | null;
  systemUsec: number | null;
  /** the nr_* and *_usec keys below only exist where the cpu controller is enabled */
  nrPeriods: number | null;
  nrThrottled: number | null;
  throttledUsec: number | null;
  nrBursts: number | null;
  burstUsec: number | null;
  max: CpuMax | null;
  weight: number | null;
}

export interface PidsStats {
  current: number | null;
  max: Limit | null;
}

/** One line of io.stat */
export interface IoDeviceStat {
  /** major:minor */
  device: string;
  rbytes: number;
  wbytes: number;
  rios: number;
  wios: number;
  dbytes: number;
  dios: number;
}

export interface CgroupStats {
  memory: MemoryStats;
  cpu: CpuStats;
  pids: PidsStats;
  io: IoDeviceStat[] | null;
  pressure: Pressure;
}

type CgroupKind = 'pod' | 'container';

/** A kubepods cgroup found by the walker, before any file in it is read. */
export interface KubeCgroup {
  kind: CgroupKind;
  /** cgroup path as the kernel prints it in /proc/<pid>/cgroup, e.g. /kubepods.slice/... */
  path: string;
  driver: CgroupDriver;
  qos: QosClass;
  podUid: string;
  /** 64-hex container id; null for a pod cgroup */
  containerId: string | null;
  /** scope prefix: cri-containerd, crio, docker; null for cgroupfs bare ids and pods */
  runtime: string | null;
}

/** What the runtime says about a cgroup's pod and container, when it answers. */
export interface RuntimeNames {
  podName: string | null;
  podNamespace: string | null;
  containerName: string | null;
  /** true when the container is the pod's sandbox (pause) container */
  sandbox: boolean | null;
}

/** What /v1/cgroups lists: where the cgroup is, whose it is, and what its files say. */
export interface CgroupRecord extends KubeCgroup, RuntimeNames, CgroupStats {}

export interface CgroupMode {
  version: CgroupVersion;
  /** what statfs said of /sys/fs/cgroup: cgroup2fs, tmpfs, ... or null when not a known magic */
  fsType: string | null;
  /** drivers whose kubepods root exists; usually exactly one */
  drivers: CgroupDriver[];
  /** human explanation when version is not v2 */
  reason: string | null;
}
