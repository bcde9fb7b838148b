/**
 * How long any answer waits for each part of a reading of the node: one table, from the
 * configuration. The metrics scrape, the triage snapshot and /readyz take their bounds
 * from here (each part within lib/deadline.ts's withinDeadline, as an Outcome); a part
 * that misses its bound is reported as not answering and the rest of the answer stands.
 *
 * At the default --cri-timeout (2 s) every part a scrape reads is bounded well under
 * Prometheus' default scrape timeout (10 s).
 */

export interface Deadlines {
  /**
   * One CRI call (--cri-timeout): the CRI client's own gRPC deadline. The runtime's names
   * for cgroups, series and OOM kills wait for the lists this long.
   */
  criCall: number;
  /**
   * CRI Version + Status, in parallel: one CRI round, each call cut by its own deadline.
   * The slack lets that call's own error (runtime_timeout, naming the method and the
   * --cri-timeout) arrive before this bound, which only catches a call that ignores it.
   */
  runtimeStatus: number;
  /** ListContainers + ListPodSandbox (or one of them), in parallel: one CRI round, as runtimeStatus. */
  runtimeLists: number;
  /**
   * The lists and then a ContainerStatus per container, 16 in flight (view/runtime-view.ts):
   * four CRI rounds, and never less than 8 s, which a 1,000-container node needs on a busy runtime.
   */
  containerRows: number;
  /**
   * The kubepods walk and the reads of its files (~250 ms for 1,450 cgroups on 2 cores,
   * readers/cgroup/cgroups.ts): 5 s is a loaded node's twentyfold.
   */
  cgroups: number;
  /** Two sweeps of every container's cpu.stat, as cgroups; the measured window comes on top. */
  throttling: number;
  /** PID use and statfs of the node's disks; statfs has its own 1 s guard per call (readers/node/statfs.ts). */
  nodeUse: number;
  /** /proc files, statfs of the node's disks and kubelet's healthz (kubeletHealthz) together. */
  nodeHealth: number;
  /** kubelet's healthz: one local HTTP GET; a kubelet that takes longer is not healthy either. */
  kubeletHealthz: number;
  /**
   * The kernel log ring alone: the first read attributes the whole ring, and at 2 s a loaded
   * node lost it in 4 of 5 first scrapes.
   */
  kmsgRing: number;
  /** The ring and the journal's kernel transport (OOM kills, kernel problems): journalctl starts a process. */
  kernelLog: number;
  /** kubelet's journal of the last minutes through journalctl (bounded in entries by the triage thresholds). */
  journal: number;
  /**
   * conntrack, taint, D/Z processes, kubelet certificates and eviction thresholds: the /proc
   * walk has a 1.5 s budget and attribution as much again (readers/node/proc-states.ts), the
   * certificates and kubelet config are read after it; no longer than a scrape's other parts.
   */
  nodeFacts: number;
  /** The CNI configuration directory: a few small files. */
  cni: number;
  /** One /readyz check: kubelet's probes give up after 1 s by default (timeoutSeconds). */
  readiness: number;
}

/** The room a CRI round gets past --cri-timeout for the call's own deadline error to arrive first. */
const CRI_SLACK_MS = 1000;

/** The table for this configuration; `overrides` (tests, a caller's tighter budget) win. */
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
    nodeFacts: 5000,
    cni: 2000,
    readiness: 1000,
    ...overrides,
  };
}
