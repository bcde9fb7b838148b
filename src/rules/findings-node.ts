/**
 * The node's findings of the triage catalogue (findings.ts): the node's own resources,
 * its facts (kernel, certificates, conntrack, the runtime's list calls), the sources that
 * did not answer, and a rule that failed.
 */
import type { FindingKind } from './findings.js';
import { THRESHOLDS as T } from './thresholds.js';

/** 0.25 → 25%, 0.957 → 95.7% */
const pct = (x: number) => `${(x * 100).toFixed(1)}%`.replace('.0%', '%');

export const NODE_FINDINGS: readonly FindingKind[] = [
  {
    id: 'disk-pressure',
    rule: 'node',
    severities: ['critical', 'warning'],
    title: "A filesystem is at kubelet's eviction threshold",
    means: `kubelet's eviction defaults: nodefs available < ${pct(T.nodefsAvailable)}, imagefs < ${pct(T.imagefsAvailable)}, inodes free < ${pct(T.nodefsInodesFree)} (critical); within ${Math.round(T.diskWarningMargin * 100)} points above (warning). One filesystem is reported once.`,
    todo: 'Free image space (`crictl rmi --prune`, image GC) on imagefs; large emptyDirs, container logs and the journal (`journalctl --vacuum-size`) on nodefs.',
  },
  {
    id: 'pid-pressure',
    rule: 'node',
    severities: ['critical', 'warning'],
    title: "The node's PIDs run out",
    means: `Threads use ${pct(T.pidUseWarning)} (warning) or ${pct(T.pidUseCritical)} (critical) of \`kernel.pid_max\`: new processes and threads will fail with EAGAIN.`,
    todo: 'Find the pod that forks without bound (`GET /v1/cgroups` lists pids.current) and set pod PID limits (kubelet `--pod-max-pids`).',
  },
  {
    id: 'memory-pressure',
    rule: 'node',
    severities: ['critical'],
    title: "The node is below kubelet's memory eviction threshold",
    means: `MemAvailable is under kubelet's eviction threshold memory.available<${T.memoryAvailableBytes / 2 ** 20}Mi: pods will be evicted, BestEffort first.`,
    todo: 'Find the biggest users with `GET /v1/cgroups?sort=memory`.',
  },
  {
    id: 'mount-not-answering',
    rule: 'node-facts',
    severities: ['critical'],
    title: 'A mount does not answer statfs',
    means: `statfs of a path the agent watches did not return within its deadline (a dead NFS server, a frozen filesystem, a FUSE daemon gone): \`df\` and anything touching it hang. The agent asks it again only once the first call returns.`,
    todo: 'Find the mount (`findmnt -T <path>`) and its server or device; restore it, `fsfreeze -u`, or `umount -f -l`.',
  },
  {
    id: 'kubelet-cert-expired',
    rule: 'node-facts',
    severities: ['critical'],
    title: "A kubelet certificate has expired",
    means: "NotAfter of kubelet's client certificate (the one its `--kubeconfig` user names: `/var/lib/kubelet/pki/kubelet-client-current.pem` on kubeadm, `/var/lib/rancher/<rke2|k3s>/agent/client-kubelet.crt` on rke2 and k3s, or `client-certificate-data`) or serving certificate (`--tls-cert-file` or `tlsCertFile`, else `kubelet-server-current.pem` or `kubelet.crt`) is past. Client: the API server refuses kubelet (401): the node goes NotReady, and kubelet refuses logs, exec and port-forward, which it can no longer ask the API server to authorize. Serving: whoever checks it fails with x509 errors (metrics-server, Prometheus, an API server started with `--kubelet-certificate-authority`); an API server without that flag, as kubeadm sets it up, does not check it.",
    todo: "Check `rotateCertificates` and pending CSRs (`kubectl get csr`). Client: kubeadm's \"kubelet client certificate rotation fails\" steps (or re-join); rke2 and k3s issue a new one when their agent service restarts. Serving: approve its CSR (`serverTLSBootstrap`), or delete `kubelet.crt` so kubelet writes a new self-signed one. Then restart kubelet.",
  },
  {
    id: 'kubelet-cert-expiring',
    rule: 'node-facts',
    severities: ['warning'],
    title: 'A kubelet certificate expires soon',
    means: `Fewer than ${T.certExpiringDays} days until NotAfter: rotation should have renewed it already.`,
    todo: "Check kubelet's log for certificate rotation errors and pending CSRs (`kubectl get csr`).",
  },
  {
    id: 'conntrack-table-full',
    rule: 'node-facts',
    severities: ['critical', 'warning'],
    title: 'The connection tracking table is (nearly) full',
    means: `nf_conntrack_count over nf_conntrack_max at ${pct(T.conntrackWarning)} (warning) or ${pct(T.conntrackCritical)} (critical): when full, new connections are dropped silently.`,
    todo: 'Raise `net.netfilter.nf_conntrack_max` (kube-proxy `--conntrack-max-per-core`) or find the pod opening connections without end (`conntrack -L`).',
  },
  {
    id: 'eviction-threshold-crossed',
    rule: 'node-facts',
    severities: ['critical', 'warning'],
    title: "A filesystem is below kubelet's own eviction threshold",
    means: "A threshold set in kubelet's config file or flags (`evictionHard`: critical, `evictionSoft`: warning), not a default, is crossed by statfs of nodefs or imagefs.",
    todo: 'Free space on that filesystem, or review the thresholds with the node owner.',
  },
  {
    id: 'processes-d-state',
    rule: 'node-facts',
    severities: ['warning'],
    title: 'Processes are stuck in uninterruptible sleep (D state)',
    means: `${T.dStateProcesses} or more processes in state D in \`/proc/<pid>/stat\`, listed by pod with their \`wchan\`: I/O that does not complete (dead NFS, frozen filesystem, failing disk).`,
    todo: 'Read `wchan`, `/proc/pressure/io` and the kernel log (hung tasks); find the mount or device they wait on.',
  },
  {
    id: 'zombies-in-pod',
    rule: 'node-facts',
    severities: ['warning'],
    title: 'Zombie processes pile up in a pod',
    means: `${T.zombiesPerPod} or more processes in state Z under one pod's cgroup: its PID 1 does not reap its children; each holds a PID.`,
    todo: 'Run an init as PID 1 (tini, dumb-init, `shareProcessNamespace`), or make the parent wait(2).',
  },
  {
    id: 'kernel-tainted',
    rule: 'node-facts',
    severities: ['warning'],
    title: 'The kernel is tainted by a problem',
    means: '`/proc/sys/kernel/tainted` has a flag that records trouble: D (oops/BUG), L (soft lockup), M (machine check), B (bad page), W (warning). Flags about how modules were built are not reported.',
    todo: 'Read the kernel log for the event that set it; the taint stays until reboot: plan to drain and reboot the node.',
  },
  {
    id: 'runtime-slow',
    rule: 'node-facts',
    severities: ['critical', 'warning'],
    title: "The runtime's list calls are slow",
    means: `ListPodSandbox or ListContainers took ${T.criSlowSeconds} s or more in the last minutes (the calls kubelet's PLEG makes every second; it reports itself unhealthy after 3 minutes, critical here).`,
    todo: "Check the runtime's log and disk, the number of containers and shims whose container is gone; `nodetruth_cri_call_duration_seconds`.",
  },
  {
    id: 'source-unavailable',
    rule: 'sources',
    severities: ['warning', 'info'],
    title: 'A source did not answer',
    means: 'A source of the snapshot failed or missed its deadline (warning for cgroups, node health and the runtime lists; info for the rest): the rules that need it did not run, the rest of the report stands.',
    todo: "Check `--host-root` and the agent's privileges (see `/readyz`).",
  },
  {
    id: 'rule-failed',
    rule: 'report',
    severities: ['warning'],
    title: 'A triage rule could not judge this snapshot',
    means: "A rule stopped on data it did not expect; the other rules' findings stand.",
    todo: "Read that rule's sources directly (the report lists them) and report the data shape to nodetruth.",
  },
];
