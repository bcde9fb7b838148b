/** Node health records (GET /v1/node). */
import type { CgroupMode, Pressure } from './cgroup.js';

export interface DiskUse {
  /** host path asked for: /, /var/lib/containerd, /var/lib/kubelet */
  path: string;
  /**
   * true: read; false: the path is not on the host; null: NOT READ, nothing is known of this
   * disk (its statfs did not return in time, found no free slot, or failed: `notRead` says which).
   * Every figure is null unless true.
   */
  present: boolean | null;
  /** why the disk was not read (present null) */
  notRead?: string;
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

/**
 * The node facts: what on-call engineers check by hand on a node that
 * misbehaves (GET /v1/node `facts`). Each part is read on its own and bounded; one
 * that cannot be read is null with a reason, never a failure of the whole.
 */
export interface NodeFacts {
  conntrack: Conntrack;
  taint: KernelTaint | null;
  processes: ProcessStates;
  certificates: KubeletCertificate[];
  eviction: EvictionConfig;
  /** statfs of each path the agent looked at, time-boxed (a hung mount never answers) */
  mounts: MountAnswer[];
  criLatency: CriLatency;
  /** the node OS and where kubelet's and the runtime's setup was found */
  nodeOs?: NodeOs;
  /** statfs of the data roots the node names (kubelet --root-dir, containerd's root) that the fixed disk list lacks */
  dataDisks?: DiskUse[];
}

/** A fact and where it came from: a flag on a command line, a file, a known path, a default. */
export interface Sourced {
  value: string;
  source: string;
}

export interface NodeOs {
  /** /etc/os-release under the host root; null fields when absent */
  distribution: { id: string | null; versionId: string | null; prettyName: string | null; name: string | null; source: string };
  /** k3s, rke2, talos, eks, gke, aks, bottlerocket … with what showed it; null when nothing did */
  flavor: { name: string; evidence: string } | null;
  kubelet: {
    pid: number | null;
    /** /proc/<pid>/cmdline, a flags file, or null */
    flagsFrom: string | null;
    config: Sourced | null;
    configDir: Sourced | null;
    kubeconfig: Sourced | null;
    certDir: Sourced;
    /** --root-dir: the filesystem kubelet's nodefs signals watch */
    rootDir: Sourced;
    /** --cgroup-driver or the config's cgroupDriver; null when neither sets it */
    cgroupDriver: Sourced | null;
    containerRuntimeEndpoint: Sourced | null;
    /** the config files merged, in order */
    files: Array<{ path: string; role: 'config' | 'drop-in'; from: string }>;
  };
  containerd: {
    pid: number | null;
    config: Sourced | null;
    address: Sourced | null;
    /** where images and snapshots live: the filesystem kubelet's imagefs signals watch */
    root: Sourced | null;
    configVersion: number | null;
    /** `SystemdCgroup` of the runc runtime's options: systemd or cgroupfs */
    cgroupDriver: Sourced | null;
  } | null;
  /** what sets the node's cgroup hierarchy: systemd's switches on the kernel command line */
  cgroup: { kernelCmdline: Sourced | null };
  /** the CRI endpoint the agent uses and how it was found */
  criEndpoint: Sourced | null;
}

export type Conntrack =
  | {
      loaded: true;
      /** /proc/sys/net/netfilter/nf_conntrack_count: entries in the agent's network namespace */
      entries: number;
      /** /proc/sys/net/netfilter/nf_conntrack_max: the limit (global, the same in every namespace) */
      limit: number;
      ratio: number | null;
      /** whether the agent shares the host's network namespace (hostNetwork); if not, entries are its own namespace's */
      hostNetwork: boolean | null;
    }
  | { loaded: false; reason: string };

export interface TaintFlag {
  bit: number;
  letter: string;
  meaning: string;
}

export interface KernelTaint {
  /** /proc/sys/kernel/tainted as the kernel writes it */
  value: number;
  /** the set bits, decoded (bits the table does not know are listed with letter '?') */
  flags: TaintFlag[];
  /** the letters as an oops prints them after "Tainted: " (set flags only) */
  letters: string;
}

export interface StuckProcess {
  pid: number;
  comm: string;
  /** D (uninterruptible sleep) or Z (zombie) */
  state: 'D' | 'Z';
  ppid: number;
  /** the kernel function a D-state task waits in (/proc/<pid>/wchan); null when not readable or 0 */
  wchan: string | null;
  /** the task's cgroup v2 path (/proc/<pid>/cgroup "0::") */
  cgroup: string | null;
  podUid: string | null;
  containerId: string | null;
}

export interface StuckByPod {
  /** null: not in a pod (a host process) */
  podUid: string | null;
  containerId: string | null;
  state: 'D' | 'Z';
  count: number;
}

export interface ProcessStates {
  /** processes whose stat was read */
  scanned: number;
  dState: number;
  zState: number;
  /** per pod / container and state (containerId null: the pod cgroup itself or a host process) */
  byPod: StuckByPod[];
  /** the first of them, with wchan and cgroup (bounded) */
  samples: StuckProcess[];
  /** why the walk stopped early (a pid or time budget), null when it saw every process */
  cut: string | null;
}

export interface KubeletCertificate {
  /** which certificate: client (kubelet → API server) or serving (API server → kubelet) */
  role: 'client' | 'serving';
  /** host path asked for; for a client certificate embedded in kubelet's kubeconfig (client-certificate-data), the kubeconfig's path */
  path: string;
  /** where a link in pki led (kubelet-client-current.pem → kubelet-client-2026-...pem), null when none */
  target: string | null;
  present: boolean;
  subject: string | null;
  issuer: string | null;
  notBefore: string | null;
  notAfter: string | null;
  /** NotAfter as seconds since the epoch (the metric's value) */
  notAfterSeconds: number | null;
  /** seconds until NotAfter at the time of the read (negative: expired) */
  secondsLeft: number | null;
  /** why no figures: absent, unreadable, no certificate in it */
  error: string | null;
  /**
   * how the path was chosen: the client-certificate or client-certificate-data of kubelet's
   * --kubeconfig user; kubelet's --cert-dir (or its default), with why the kubeconfig named
   * none when it was read; the config's tlsCertFile
   */
  source?: string;
}

export type EvictionSignal = 'memory.available' | 'nodefs.available' | 'nodefs.inodesFree' | 'imagefs.available' | 'imagefs.inodesFree' | 'pid.available';

export interface EvictionThreshold {
  signal: EvictionSignal;
  kind: 'hard' | 'soft';
  /** as written: "100Mi", "10%" */
  value: string;
  /** a fraction of capacity ("10%") or null */
  ratio: number | null;
  /** an absolute quantity in bytes (or inodes / pids) or null */
  quantity: number | null;
  /** config: from kubelet's config file; default: kubelet's built-in default (Linux) */
  from: 'config' | 'default';
  /** which file (the base config or a drop-in) or flag set it, or "kubelet's default" */
  source?: string;
}

export interface EvictionConfig {
  /** the config file read (from kubelet's --config, else /var/lib/kubelet/config.yaml), null when none */
  configPath: string | null;
  /** how it was found: kubelet's --config, /var/lib/kubelet/config.yaml, or a distribution's known path */
  foundBy: 'cmdline' | 'default-path' | 'distribution-path' | null;
  /** --config-dir drop-ins merged over it, in the order applied */
  dropIns?: string[];
  thresholds: EvictionThreshold[];
  /** signals against the filesystems they watch, for the hard thresholds in force */
  checks: EvictionCheck[];
  error: string | null;
}

export interface EvictionCheck {
  signal: EvictionSignal;
  kind: 'hard' | 'soft';
  path: string;
  /** the signal's value now (bytes or inodes available) */
  available: number;
  capacity: number;
  /** the threshold in the same unit */
  threshold: number;
  /** available below the threshold: kubelet evicts (hard) or will after the grace period (soft) */
  crossed: boolean;
}

export type MountAnswer =
  | { path: string; answered: true; ms: number }
  /** outstanding: its own statfs is still out (since `since`); false: no free slot to ask it in time */
  | { path: string; answered: false; reason: string; since: string; outstanding: boolean };

export interface CriMethodLatency {
  method: 'ListPodSandbox' | 'ListContainers';
  /** calls seen in the window */
  calls: number;
  errors: number;
  /** seconds */
  lastSeconds: number | null;
  lastAt: string | null;
  lastCode: string | null;
  maxSeconds: number | null;
  p50Seconds: number | null;
}

export interface CriLatency {
  /** the window the figures cover (calls of the last N seconds, at most M calls) */
  windowSeconds: number;
  methods: CriMethodLatency[];
}
