/**
 * Where each managed node OS keeps kubelet's and the runtime's configuration and logs,
 * as data. The agent asks the node first (kubelet's and containerd's own command lines in
 * the host's /proc); these paths are the fallback when no process names them, tried in
 * order, the first that exists wins. Sources (the distributions' own repositories):
 * - EKS AL2023: awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go
 *   (kubeletConfigRoot /etc/kubernetes/kubelet, config.json, config.json.d, --config-dir)
 * - Bottlerocket: bottlerocket-os/bottlerocket kubelet unit (--config /etc/kubernetes/kubelet/config,
 *   --cert-dir /var/lib/kubelet/pki, --container-runtime-endpoint=unix:///run/containerd/containerd.sock)
 * - GKE COS: kubernetes cluster/gce configure-helper (--config=/home/kubernetes/kubelet-config.yaml)
 * - AKS: Azure/AgentBaker (/etc/default/kubeletconfig.json, KUBELET_FLAGS in /etc/default/kubelet,
 *   certificates in /etc/kubernetes/certs)
 * - k3s / rke2: k3s-io/k3s pkg/agent/containerd (containerd -c … -a /run/k3s/containerd/containerd.sock);
 *   kubelet runs inside the k3s process, configured by flags only
 * - Talos: siderolabs/talos pkg/machinery/constants (CRIContainerdAddress /run/containerd/containerd.sock,
 *   SystemContainerdAddress /system/run/containerd/containerd.sock); service logs in /var/log/<service>.log
 */

/** kubelet config files, base file first; the drop-in directory beside it when it exists */
export const KUBELET_CONFIG_PATHS: ReadonlyArray<{ distribution: string; config: string; configDir?: string }> = [
  { distribution: 'eks', config: '/etc/kubernetes/kubelet/config.json', configDir: '/etc/kubernetes/kubelet/config.json.d' },
  { distribution: 'bottlerocket', config: '/etc/kubernetes/kubelet/config' },
  { distribution: 'gke', config: '/home/kubernetes/kubelet-config.yaml' },
  { distribution: 'aks', config: '/etc/default/kubeletconfig.json' },
  { distribution: 'kubeadm', config: '/var/lib/kubelet/config.yaml' },
];

/** files of KEY="--flag=value ..." lines naming kubelet's flags when no kubelet process is seen */
export const KUBELET_FLAG_FILES: ReadonlyArray<{ distribution: string; path: string; variable: string }> = [
  { distribution: 'aks', path: '/etc/default/kubelet', variable: 'KUBELET_FLAGS' },
];

/** kubelet's own defaults for the flags the agent uses (kubelet --help) */
export const KUBELET_FLAG_DEFAULTS = {
  'cert-dir': '/var/lib/kubelet/pki',
  'root-dir': '/var/lib/kubelet',
} as const;

/** containerd's own defaults (containerd config default) */
export const CONTAINERD_DEFAULTS = {
  config: '/etc/containerd/config.toml',
  root: '/var/lib/containerd',
} as const;

/**
 * systemd drop-in directories of containerd's unit, read for the Environment= line that
 * names its config: Flatcar's post-update step writes 10-use-cgroupfs.conf here
 * (CONTAINERD_CONFIG=/usr/share/containerd/config-cgroupfs.toml) to keep upgraded nodes
 * on cgroupfs and cgroup v1 (flatcar-docs container-runtimes/switching-to-unified-cgroups).
 */
export const CONTAINERD_UNIT_DROPIN_DIRS: readonly string[] = ['/etc/systemd/system/containerd.service.d', '/run/systemd/system/containerd.service.d'];

/**
 * CRI sockets tried, in order, when neither --cri-endpoint nor kubelet names one.
 * Talos' system containerd (/system/run/containerd/containerd.sock) runs Talos' own
 * services, not pods: it is never a CRI endpoint and is not listed.
 */
export const CRI_SOCKETS: ReadonlyArray<{ runtime: string; path: string }> = [
  { runtime: 'containerd', path: '/run/containerd/containerd.sock' },
  { runtime: 'containerd (k3s/rke2)', path: '/run/k3s/containerd/containerd.sock' },
  { runtime: 'cri-o', path: '/run/crio/crio.sock' },
];

/** sockets that are never the CRI endpoint, even when kubelet's flags or a caller's guess name them */
export const NOT_CRI_SOCKETS: readonly string[] = ['/system/run/containerd/containerd.sock'];

/** programs that run kubelet inside themselves (k3s server and agent): kubelet's journal records are their unit's */
export const KUBELET_HOSTS: readonly string[] = ['k3s-server', 'k3s-agent', 'k3s'];

/** the journal's directories: persistent, then volatile */
export const JOURNAL_DIRS: readonly string[] = ['/var/log/journal', '/run/log/journal'];

/**
 * Log files a unit writes where the node keeps no journal, relative to /var/log (the
 * node log query's directory), tried in order: Talos writes /var/log/<service>.log;
 * kubelet started with --log-file commonly writes /var/log/kubelet.log.
 */
export const UNIT_LOG_FILES: Readonly<Record<string, readonly string[]>> = {
  kubelet: ['kubelet.log'],
  containerd: ['containerd.log'],
  cri: ['cri.log'],
  etcd: ['etcd.log'],
  machined: ['machined.log'],
  apid: ['apid.log'],
  trustd: ['trustd.log'],
  udevd: ['udevd.log'],
};

/** os-release ID → distribution name shown in /v1/node */
export const OS_IDS: Readonly<Record<string, string>> = {
  amzn: 'Amazon Linux',
  bottlerocket: 'Bottlerocket',
  cos: 'Container-Optimized OS',
  ubuntu: 'Ubuntu',
  azurelinux: 'Azure Linux',
  mariner: 'CBL-Mariner',
  talos: 'Talos',
  flatcar: 'Flatcar',
  debian: 'Debian',
};

/** bounds on what is read while discovering */
export const NODE_OS_LIMITS = {
  /** drop-in files read at most (kubelet reads every *.conf; more than this is a hostile directory) */
  maxDropIns: 64,
  /** directory entries looked at in a drop-in directory, its subdirectories included */
  maxDirEntries: 20_000,
  /** subdirectory levels of a drop-in directory walked (kubelet walks them all) */
  maxDropInDepth: 8,
  /** directories of a drop-in tree listed at most */
  maxDropInDirs: 256,
  /** bytes of one config file or drop-in */
  maxConfigBytes: 1024 * 1024,
  /** argv entries of one command line read */
  maxArgs: 512,
  /** characters of one flag value kept */
  maxValueChars: 4096,
  /** /proc entries looked at when finding kubelet and containerd synchronously at start */
  maxProcEntries: 100_000,
  /** bytes of /etc/os-release */
  maxOsReleaseBytes: 16 * 1024,
} as const;
