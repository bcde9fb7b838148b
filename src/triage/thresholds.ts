/**
 * Every number and pattern the triage rules use, in one table. Disk
 * thresholds are kubelet's default hard eviction thresholds (Linux):
 * memory.available<100Mi, nodefs.available<10%, imagefs.available<15%,
 * nodefs.inodesFree<5%, imagefs.inodesFree<5%.
 */
import type { Severity } from '../model/triage.js';
import { containsInOrder } from '../lib/phrases.js';

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

/**
 * A phrase a kubelet line contains: a literal, or literals in this order with anything
 * between them (what `A.*B` meant as a regex). Matched with indexOf, so a hostile
 * message (tenants' pod names, images and container errors reach kubelet's log) costs
 * linear time: the regex form `PLEG.*relist` took 18 s over 20,000 lines of `PLEGPLEG…`.
 */
export type Phrase = string | readonly string[];

export interface JournalPattern {
  id: string;
  severity: Severity;
  title: string;
  /** the line matches when it contains any of these */
  phrases: readonly Phrase[];
  hint: string;
}

/** Only this much of a message is searched: klog puts the error first; the rest is tenant-controlled detail. */
export const JOURNAL_MATCH_PREFIX = 1024;

/**
 * kubelet journal lines that mean trouble, matched on klog E/W/F lines only
 * (journald stores kubelet's stderr as PRIORITY 6; the klog letter is the severity).
 */
export const KUBELET_JOURNAL_PATTERNS: readonly JournalPattern[] = [
  {
    id: 'kubelet-image-pull-errors',
    severity: 'warning',
    title: 'kubelet cannot pull images',
    phrases: [
      'ErrImagePull',
      'ImagePullBackOff',
      'Failed to pull image',
      'failed to pull image',
      'Failed to pull and unpack image',
      'failed to pull and unpack image',
      'failed to resolve reference',
      'pull access denied',
    ],
    hint: 'Check the image name and tag, registry reachability from the node (DNS, proxy), and imagePullSecrets; GET /v1/logs?query=containerd&pattern=pull shows the runtime side.',
  },
  {
    id: 'kubelet-sandbox-network-errors',
    severity: 'critical',
    title: 'kubelet cannot set up pod networking (CNI)',
    phrases: [
      'failed to set up network',
      'failed to setup network',
      'failed to setup network for sandbox',
      ['failed to set up sandbox container ', ' network'],
      'NetworkPluginNotReady',
      'cni plugin not initialized',
      'networkPlugin cni failed',
      'failed to find plugin',
      'failed to load plugin',
      'CNI failed',
      ['plugin type="', '" failed'],
    ],
    hint: 'Pods cannot get a network: check the CNI daemonset on this node (is its pod running?), config files in /etc/cni/net.d and binaries in /opt/cni/bin; GET /v1/runtime shows NetworkReady.',
  },
  {
    id: 'kubelet-pleg-unhealthy',
    severity: 'critical',
    title: "kubelet's pod lifecycle event generator (PLEG) is not healthy",
    phrases: ['PLEG is not healthy', ['PLEG', 'relist'], 'pleg was last seen active'],
    hint: 'kubelet cannot list containers in time: the runtime is slow or wedged, or there are too many containers; check /v1/runtime latency and nodetruth_cri_call_duration_seconds.',
  },
  {
    id: 'kubelet-runtime-not-ready',
    severity: 'critical',
    title: 'kubelet reports the container runtime not ready',
    phrases: [
      'Container runtime is down',
      'container runtime is down',
      'Container runtime not ready',
      'container runtime not ready',
      'Container runtime status check may not have completed',
      'container runtime status check may not have completed',
      'ContainerRuntimeNotReady',
      'runtime not ready',
      'RuntimeReady=false',
      'rpc error: code = Unavailable desc = connection error',
    ],
    hint: 'kubelet cannot use the runtime: see the runtime findings above and `journalctl -u containerd` (GET /v1/logs?query=containerd).',
  },
];

/** Does the message hold one of the pattern's phrases? Linear in the (bounded) message. */
export function matchesJournalPattern(p: JournalPattern, message: string): boolean {
  const m = message.length > JOURNAL_MATCH_PREFIX ? message.slice(0, JOURNAL_MATCH_PREFIX) : message;
  return p.phrases.some((ph) => (typeof ph === 'string' ? m.includes(ph) : containsInOrder(m, ph)));
}
