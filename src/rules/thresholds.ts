/**
 * Every number the triage rules use, in one table. Disk thresholds are kubelet's
 * default hard eviction thresholds (Linux): memory.available<100Mi,
 * nodefs.available<10%, imagefs.available<15%, nodefs.inodesFree<5%,
 * imagefs.inodesFree<5%.
 */
export const THRESHOLDS = {
  /** crash loop: a container at this attempt or later whose last run exited non-zero */
  crashLoopAttempt: 3,
  /** throttled share of CFS periods over the measuring window */
  throttledShare: 0.25,
  /** working set over memory.max */
  memoryNearLimit: 0.9,
  /** memory.current at or above this fraction of memory.high: the kernel is holding the cgroup there (memory-high-reclaim) */
  memoryHighNear: 0.9,
  /** memory.pressure "some" avg10 (percent of the last 10 s) at or above which reclaim at memory.high is slowing the cgroup */
  memoryHighPressureSome: 10,
  /** kubelet eviction defaults (fractions available / free) */
  nodefsAvailable: 0.1,
  imagefsAvailable: 0.15,
  nodefsInodesFree: 0.05,
  imagefsInodesFree: 0.05,
  /** kubelet memory.available<100Mi */
  memoryAvailableBytes: 100 * 1024 * 1024,
  /** warn this much (fraction) above an eviction threshold */
  diskWarningMargin: 0.05,
  /** threads over kernel.pid_max */
  pidUseWarning: 0.8,
  pidUseCritical: 0.95,
  /** a container still CREATED (never started) after this long is stuck */
  createdStuckSeconds: 60,
  /** a sandbox NOTREADY for at least this long (kubelet retries in between) */
  notReadySandboxSeconds: 60,
  /** kubelet journal errors: how far back */
  journalWindowMinutes: 10,
  /**
   * kubelet logs its "not yet" lines (PLEG "has yet to be successful", the runtime status
   * check "may not have completed yet") from its start until its first relist succeeds, at
   * every start: for 1-8 s on the dev cluster's TCG node. One kubelet process still logging
   * them this long after its first is a runtime that never answered.
   */
  kubeletStartupSeconds: 60,
  /** at most this many kubelet journal entries are read */
  journalMaxEntries: 20_000,
  /** kernel OOM kills this recent are reported */
  oomWindowMinutes: 60,
  /** kernel log problems this recent are reported (a read-only remount or an oops: whatever its age this boot) */
  kernelWindowMinutes: 60,
  /** conntrack entries over nf_conntrack_max */
  conntrackWarning: 0.9,
  conntrackCritical: 0.98,
  /** this many processes in D state at once (one is often a moment's I/O) */
  dStateProcesses: 3,
  /** zombies under one pod */
  zombiesPerPod: 10,
  /** a kubelet certificate with fewer days left (rotation renews at 70-90% of its life) */
  certExpiringDays: 7,
  /** a statfs out this long is a hung mount, not a slow one or a busy thread pool (a hung NFS mount never returns) */
  mountHungSeconds: 10,
  /** a CRI list call this slow (seconds): PLEG relists every second */
  criSlowSeconds: 1,
  /** evidence excerpts per finding */
  maxEvidence: 5,
  /** throttling window (ms) when none is given */
  defaultWindowMs: 2000,
} as const;
