/**
 * How long any answer waits for each part of a reading of the node: one table, from the
 * configuration. The scrape, the triage snapshot, /readyz and /v1/node wait for each part
 * with lib/deadline.ts's withinDeadline; a part past its bound is reported as not
 * answering and the rest of the answer stands. At the default --cri-timeout (2 s) every
 * part a scrape reads is bounded well under Prometheus' default scrape timeout (10 s).
 */

export interface Deadlines {
  /** One CRI call: --cri-timeout, the CRI client's own gRPC deadline; names for cgroups, series and OOM kills wait this long. */
  criCall: number;
  /**
   * CRI Version + Status in parallel: one CRI round. The slack lets the call's own error
   * (runtime_timeout, naming the method) arrive first; this bound catches a call that ignores it.
   */
  runtimeStatus: number;
  /** ListContainers + ListPodSandbox in parallel: one CRI round, as runtimeStatus. */
  runtimeLists: number;
  /** The lists, then ContainerStatus per container 16 in flight (view/runtime-view.ts): four CRI rounds, never under 8 s. */
  containerRows: number;
  /** The kubepods walk and its files: ~250 ms for 1,450 cgroups on 2 cores (readers/cgroup/cgroups.ts), twentyfold. */
  cgroups: number;
  /** Two sweeps of every container's cpu.stat, as cgroups; the measured window comes on top. */
  throttling: number;
  /** PID use and the disks' statfs; each statfs has its own 1 s guard (readers/node/statfs.ts). */
  nodeUse: number;
  /** /proc files, the disks' statfs and kubelet's healthz (kubeletHealthz) together. */
  nodeHealth: number;
  /** kubelet's healthz: one local HTTP GET; a kubelet slower than this is not healthy either. */
  kubeletHealthz: number;
  /** The kernel log ring: the first read attributes the whole ring; at 2 s a loaded node lost it in 4 of 5 first scrapes. */
  kmsgRing: number;
  /** The kernel log as triage reads it: OOM kills from the ring and the journal (journalctl starts a process), kernel problems attributed. */
  kernelLog: number;
  /** kubelet's journal of the last minutes through journalctl. */
  journal: number;
  /** The API server's Events of this node and its pods: the pod list, then one list per pod, 4 in flight (view/timeline/kube.ts). */
  kubeEvents: number;
  /**
   * conntrack, taint, D/Z processes, kubelet certificates and eviction thresholds: the /proc walk's
   * budget is 1.5 s and attribution as much again (readers/node/proc-states.ts), the files after it.
   */
  nodeFacts: number;
  /** The CNI configuration directory: a few small files. */
  cni: number;
  /** One /readyz check: kubelet's probes give up after 1 s by default (timeoutSeconds). */
  readiness: number;
}

/** The room a CRI round gets past --cri-timeout for the call's own deadline error to arrive first. */
const CRI_SLACK_MS = 1000;

/** The table for this configuration; `overrides` (tests, a caller's own budget) win. */
export function deadlines(config: { criTimeoutMs: number }, overrides: Partial<Deadlines> = {}): Deadlines {
  const cri = config.criTimeoutMs;
  return {
    criCall: cri,
    runtimeStatus: cri + CRI_SLACK_MS,
    runtimeLists: cri + CRI_SLACK_MS,
    containerRows: Math.max(8000, 4 * cri),
    cgroups: 5000,
    throttling: 5000,
    nodeUse: 2000,
    nodeHealth: 3000,
    kubeletHealthz: 1000,
    kmsgRing: 5000,
    kernelLog: 8000,
    journal: 10_000,
    kubeEvents: 8000,
    nodeFacts: 5000,
    cni: 2000,
    readiness: 1000,
    ...overrides,
  };
}
