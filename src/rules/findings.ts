/**
 * Every finding triage can report, as data: its id, the rule that emits it, the
 * severities it comes in, a title, what it means and what to do. Most rules write
 * each finding's own title, detail and hint from the evidence; the journal and kernel
 * rules take title, severity and hint from here. This catalogue is the stable list a
 * user (docs/triage.md, generated from it) and the tests go by: a rule emits only ids
 * catalogued under its name, with a catalogued severity. Numbers come from
 * thresholds.ts, so the text and the rules cannot disagree.
 */
import type { Severity } from '../model/triage.js';
import { KUBELET_JOURNAL_PATTERNS, type Phrase } from './journal-patterns.js';
import { KERNEL_PROBLEMS } from './kernel-problems.js';
import { THRESHOLDS as T } from './thresholds.js';
import { NODE_FINDINGS } from './findings-node.js';

/** The rules, by area (src/triage/rules/<area>.ts). */
export type RuleName = 'runtime' | 'kubelet' | 'journal' | 'oom' | 'kernel' | 'crash-loop' | 'sandboxes' | 'stuck-created' | 'throttling' | 'memory' | 'node' | 'node-facts' | 'sources';

export interface FindingKind {
  id: string;
  /** the rule that emits it; 'report' for the one report.ts emits when a rule throws */
  rule: RuleName | 'report';
  severities: readonly Severity[];
  title: string;
  means: string;
  todo: string;
}

/** 0.25 → 25%, 0.957 → 95.7% */
const pct = (x: number) => `${(x * 100).toFixed(1)}%`.replace('.0%', '%');
/** two of a pattern's phrases, not two spellings of one */
const examples = (phrases: readonly Phrase[]) =>
  phrases
    .map((ph) => (typeof ph === 'string' ? ph : ph.join('…')))
    .filter((ph, i, all) => all.findIndex((o) => o.toLowerCase() === ph.toLowerCase()) === i)
    .slice(0, 2)
    .map((ph) => `\`${ph}\``)
    .join(', ');

/** a kubelet journal pattern's finding (journal-patterns.ts, by id) */
function journal(id: string, severity: Severity, title: string, todo: string): FindingKind {
  const pattern = KUBELET_JOURNAL_PATTERNS.find((p) => p.id === id);
  const startup = pattern?.untilFirstSuccess
    ? ` Lines holding ${examples(pattern.untilFirstSuccess)}, which kubelet logs at every start until its first success, count only when one kubelet process logs them for more than ${T.kubeletStartupSeconds} s.`
    : '';
  const means = `E/W/F lines in kubelet's journal of the last ${T.journalWindowMinutes} minutes: ${title} (phrases such as ${examples(pattern?.phrases ?? [])}).${startup}`;
  return { id, rule: 'journal', severities: [severity], title, means, todo };
}

/** a kernel log problem's finding (kernel-problems.ts, by id) */
function kernel(id: string, severity: Severity, title: string, means: string, todo: string): FindingKind {
  const lasting = KERNEL_PROBLEMS.find((k) => k.id === id)?.lasting === true;
  const when = lasting ? 'Reported whatever its age this boot.' : `Records of the last ${T.kernelWindowMinutes} minutes.`;
  return { id, rule: 'kernel', severities: [severity], title, means: `${means} ${when}`, todo };
}

/** the workloads' and the runtime's findings, then the node's (findings-node.ts) */
export const FINDINGS: readonly FindingKind[] = [
  {
    id: 'runtime-unreachable',
    rule: 'runtime',
    severities: ['critical'],
    title: 'The container runtime is unreachable',
    means: 'No CRI socket was found under the host root, or nothing answers on it (socket missing, connection refused).',
    todo: '`systemctl status containerd` and its log (`GET /v1/logs?query=containerd`); pass `--cri-endpoint` if the socket is elsewhere, `--host-root` if the host is mounted elsewhere.',
  },
  {
    id: 'runtime-not-answering',
    rule: 'runtime',
    severities: ['critical'],
    title: 'The container runtime does not answer',
    means: 'The runtime accepts connections but does not answer within `--cri-timeout`: it is wedged (stopped, deadlocked, or its disk hangs).',
    todo: 'Check its state (`ps -o pid,stat,wchan -C containerd`) and its log; `kill -USR1 $(pidof containerd)` dumps its goroutines to that log.',
  },
  {
    id: 'runtime-not-ready',
    rule: 'runtime',
    severities: ['critical'],
    title: 'The container runtime reports RuntimeReady=false',
    means: 'CRI `Status` says `RuntimeReady` is false: kubelet will not start pods on this node.',
    todo: 'Read the runtime log around now (`GET /v1/logs?query=containerd&tailLines=200`).',
  },
  {
    id: 'network-not-ready',
    rule: 'runtime',
    severities: ['critical'],
    title: 'Pod networking is not ready (NetworkReady=false)',
    means: "CRI `Status` says `NetworkReady` is false; the evidence shows the CNI config files and plugin binaries (dirs from the runtime's config, else `/etc/cni/net.d`, `/opt/cni/bin`) and what is missing or broken.",
    todo: "Check the network daemonset's pod on this node; install missing plugins, fix broken config files; when all is in place, read the runtime log for CNI errors.",
  },
  {
    id: 'kubelet-unhealthy',
    rule: 'kubelet',
    severities: ['critical'],
    title: "kubelet's health check fails",
    means: "kubelet's healthz does not answer, or answers other than 200.",
    todo: '`systemctl status kubelet` and its log (`GET /v1/logs?query=kubelet.service&tailLines=200`); pass `--kubelet-healthz` if kubelet listens elsewhere.',
  },
  // one finding per kind of kubelet log line (journal-patterns.ts)
  journal('kubelet-image-pull-errors', 'warning', 'kubelet cannot pull images',
    'Check the image name and tag, registry reachability from the node (DNS, proxy), and imagePullSecrets; GET /v1/logs?query=containerd&pattern=pull shows the runtime side.'),
  journal('kubelet-sandbox-network-errors', 'critical', 'kubelet cannot set up pod networking (CNI)',
    'Pods cannot get a network: check the CNI daemonset on this node (is its pod running?), config files in /etc/cni/net.d and binaries in /opt/cni/bin; GET /v1/runtime shows NetworkReady.'),
  journal('kubelet-pleg-unhealthy', 'critical', "kubelet's pod lifecycle event generator (PLEG) is not healthy",
    'kubelet cannot list containers in time: the runtime is slow or wedged, or there are too many containers; check /v1/runtime latency and nodetruth_cri_call_duration_seconds.'),
  journal('kubelet-runtime-not-ready', 'critical', 'kubelet reports the container runtime not ready',
    'kubelet cannot use the runtime: see the runtime findings above and `journalctl -u containerd` (GET /v1/logs?query=containerd).'),
  journal('kubelet-api-unauthorized', 'critical', 'The API server refuses kubelet (401 Unauthorized)',
    "kubelet's client certificate has expired or was not issued by this cluster's CA, or its token or cloud identity is no longer accepted: see kubelet-cert-expired and `kubectl get csr`. Until it is fixed the node goes NotReady, and kubelet refuses logs, exec and port-forward (it cannot ask the API server to authorize them): reach the agent on the node's address (the DaemonSet), not through a port-forward."),

  {
    id: 'oom-kill',
    rule: 'oom',
    severities: ['warning'],
    title: 'OOM kill in a container',
    means: `The kernel killed a process at its cgroup's memory limit in the last ${T.oomWindowMinutes} minutes, or a live container's \`memory.events\` counts OOM kills (a child was killed; kubectl shows no restart).`,
    todo: "Raise the container's memory limit or reduce its use; `GET /v1/oom` shows the kernel report, the container's logs with `previous=true` its last output.",
  },
  {
    id: 'oom-kill-node',
    rule: 'oom',
    severities: ['critical'],
    title: 'The node ran out of memory: the kernel OOM killer ran',
    means: 'A global OOM kill: not a cgroup limit, the whole node was out of memory.',
    todo: 'Compare `kubectl describe node` allocated requests with usage; look for pods without memory limits (BestEffort, Burstable).',
  },
  {
    id: 'oom-kill-misreported',
    rule: 'oom',
    severities: ['warning'],
    title: 'OOM-killed, but the runtime reports another reason',
    means: "The runtime says exit 137 with a reason other than `OOMKilled` while the kernel log shows the container's cgroup was OOM-killed (containerd records the reason racily).",
    todo: "Treat it as an OOM kill: raise the memory limit; don't chase an application error.",
  },
  // one finding per kernel log problem (kernel-problems.ts)
  kernel('kernel-hung-task', 'warning', 'A task was blocked in the kernel (hung task)',
    'The hung-task detector saw a task in uninterruptible sleep (D) for longer than `kernel.hung_task_timeout_secs` (`INFO: task <comm>:<pid> blocked for more than N seconds.`): it waits on I/O that does not complete (a dead NFS server, a stuck block device, a frozen filesystem) or on a lock held by such a task.',
    'Find what it waits on: `cat /proc/<pid>/stack` and `/proc/<pid>/wchan`, `GET /v1/kernel?pattern=blocked for more than` for the stack the kernel printed, and look for I/O or NFS errors before it; a task in D cannot be killed until the I/O returns.'),
  kernel('kernel-soft-lockup', 'critical', 'A CPU was stuck in the kernel (soft or hard lockup)',
    'The watchdog saw a CPU run kernel code without scheduling for longer than the threshold (`BUG: soft lockup - CPU#n stuck for Ns! [<comm>:<pid>]`), or not even taking interrupts (hard LOCKUP): the kernel misbehaves; everything on that CPU stalls.',
    'Read the stack the kernel printed (`GET /v1/kernel?pattern=soft lockup`); a lockup under heavy load on a VM can be the hypervisor stealing CPU (check steal time). Drain the node if lockups repeat; report the stack to the kernel vendor.'),
  kernel('kernel-rcu-stall', 'critical', 'RCU stalls: CPUs did not pass a quiescent state',
    'The RCU subsystem waited too long for CPUs or tasks (`rcu: INFO: rcu_sched detected stalls on CPUs/tasks`, `rcu_preempt self-detected stall on CPU`): a CPU loops in the kernel with preemption or interrupts off; memory is not freed meanwhile and the node stalls.',
    "Read the records after it for the stalled CPUs' stacks (`GET /v1/kernel?pattern=stall`); on a VM, check for CPU steal. Drain the node if stalls repeat."),
  kernel('kernel-oops', 'critical', 'The kernel hit a bug (BUG, oops, general protection fault)',
    'The kernel faulted in its own code (`BUG: unable to handle page fault`, `BUG: kernel NULL pointer dereference`, `kernel BUG at`, `Oops:`, `general protection fault`): the task it ran for was killed and the kernel is tainted (D); locks it held may never be released, so more tasks may hang.',
    'Read the whole report (`GET /v1/kernel?sinceSeq=<seq>&tailLines=80`: Call Trace, modules, taint). The node is no longer trustworthy: cordon and drain it, reboot, and report the trace to the kernel vendor.'),
  kernel('kernel-fs-read-only', 'critical', 'A filesystem was remounted read-only or shut down after errors',
    'The kernel stopped writes to a filesystem after it found errors (`EXT4-fs (<dev>): Remounting filesystem read-only`, `XFS (<dev>): ... Shutting down filesystem`): every write there fails with EROFS or EIO until it is repaired and remounted.',
    'Find the mount (`grep <dev> /proc/self/mountinfo`); pods writing to it fail. Drain the node, repair the filesystem (`fsck` / `xfs_repair` unmounted) and check the disk; the errors before this record say why.'),
  kernel('kernel-fs-error', 'warning', 'A filesystem reports errors',
    'ext4 or XFS found corrupt metadata or could not read or write it (`EXT4-fs error (device <dev>)`, `XFS (<dev>): Corruption detected`, `XFS (<dev>): metadata I/O error`, `Aborting journal on device`): files may be lost and the filesystem may go read-only next.',
    'Check the device beneath (block I/O errors, `smartctl`, the cloud disk); plan a repair (`fsck -n` / `xfs_repair -n` report without changing). With `errors=remount-ro` the next error stops writes.'),
  kernel('kernel-io-error', 'warning', 'A block device returns I/O errors',
    'Reads or writes to a disk failed (`I/O error, dev <dev>, sector <n>`, `blk_update_request: I/O error`, `Buffer I/O error on dev <dev>`): the disk, its path or the cloud volume is failing; filesystems on it will report errors next.',
    'Check the device (`smartctl -a`, the cloud volume state, multipath) and which filesystem lives on it (`lsblk`); tasks waiting on it show up as hung tasks.'),
  kernel('kernel-conntrack-full', 'critical', 'The conntrack table is full: new connections are dropped',
    'netfilter had no room for a new connection and dropped its packet (`nf_conntrack: nf_conntrack: table full, dropping packet`, or `table full in netns <n>`): new connections of every pod (and Service traffic through kube-proxy NAT) fail or time out at random, silently.',
    'Compare `/proc/sys/net/netfilter/nf_conntrack_count` with `nf_conntrack_max`; raise the limit (kube-proxy `--conntrack-max-per-core`, sysctl `net.netfilter.nf_conntrack_max`) or find the pod opening connections without bound (`conntrack -L` by source).'),
  {
    id: 'crash-loop',
    rule: 'crash-loop',
    severities: ['warning'],
    title: 'A container is crash-looping',
    means: `A container at attempt ${T.crashLoopAttempt} or later whose last run exited non-zero.`,
    todo: "Read the last run's output (`GET /v1/containers/{id}/logs?tailLines=100`); exit 137 is SIGKILL, often an OOM kill or a failed liveness probe.",
  },
  {
    id: 'sandbox-not-ready',
    rule: 'sandboxes',
    severities: ['warning'],
    title: 'A pod has no ready sandbox and no running container',
    means: `Every sandbox of the pod is NOTREADY (the newest for at least ${T.notReadySandboxSeconds} s) and none of its containers runs; finished pods are left out: the containers of the newest sandbox have all exited, with any exit code (a stopped Never or OnFailure pod).`,
    todo: "kubelet could not (re)create the sandbox: look for sandbox errors in kubelet's log (`GET /v1/logs?query=kubelet.service&pattern=sandbox`), usually CNI or the pause image.",
  },
  {
    id: 'container-stuck-created',
    rule: 'stuck-created',
    severities: ['warning'],
    title: 'A container was created and never started',
    means: `A container still CREATED ${T.createdStuckSeconds} s after it was created: StartContainer failed or hangs.`,
    todo: "Read the runtime log for its id (`GET /v1/logs?query=containerd&pattern=<id>`): often a volume mount, a missing device, or a runc error.",
  },
  {
    id: 'cpu-throttling',
    rule: 'throttling',
    severities: ['warning'],
    title: 'A container is CPU-throttled',
    means: `More than ${pct(T.throttledShare)} of its CFS periods were throttled over the measuring window: it wants more CPU than its limit.`,
    todo: 'Raise (or remove) its CPU limit; `GET /v1/throttling?window=10s` measures again.',
  },
  {
    id: 'memory-near-limit',
    rule: 'memory',
    severities: ['warning'],
    title: 'A container is close to its memory limit',
    means: `Its working set (memory.current less inactive_file) is over ${pct(T.memoryNearLimit)} of \`memory.max\`: an OOM kill is near.`,
    todo: 'Raise the memory limit or find what grows: `GET /v1/containers/{id}/processes` lists RSS per process.',
  },
  {
    id: 'memory-high-reclaim',
    rule: 'memory',
    severities: ['warning'],
    title: 'A container is throttled at memory.high',
    means: `\`memory.high\` is set (not \`max\`) and the kernel holds the cgroup there: \`memory.events\` counts \`high\` events, memory.current is at ${pct(T.memoryHighNear)} of memory.high or above, and its tasks stalled on memory ${T.memoryHighPressureSome}% or more of the last 10 s (\`memory.pressure\` some avg10; the working set must be at memory.high too where the kernel has no PSI). No OOM kill: allocations wait in reclaim and the workload just runs slowly.`,
    todo: 'Raise memory.high, or the limit Kubernetes derives it from (the MemoryQoS feature gate sets it to request + `memoryThrottlingFactor` × (limit − request)), or reduce what the workload keeps in memory: `GET /v1/containers/{id}/processes` lists RSS per process.',
  },
  ...NODE_FINDINGS,
];
