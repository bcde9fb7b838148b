/**
 * Map a cgroup v2 path (as the kernel prints it in /proc/<pid>/cgroup or in an
 * OOM report's task_memcg=) to the pod and container it belongs to, for both
 * kubelet cgroup drivers:
 *
 *   systemd:  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
 *             /kubepods.slice/kubepods-pod<uid_>.slice/crio-<id>.scope        (guaranteed: directly under kubepods)
 *   cgroupfs: /kubepods/burstable/pod<uid>/<id>
 *             /kubepods/pod<uid>/<id>                                          (guaranteed)
 *
 * A kubelet --cgroup-root may put everything one level lower
 * (/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/...),
 * so the kubepods component is searched for, not assumed at the top.
 * Pure: no I/O.
 */
import type { CgroupDriver, QosClass } from '../../model/cgroup.js';

interface KubepodsPath {
  driver: CgroupDriver;
  qos: QosClass;
  /** pod UID with dashes, as the API server spells it */
  podUid: string;
  /** the pod's own cgroup path (prefix of the input) */
  podCgroup: string;
  /** 64-hex container id, when the path reaches a container cgroup */
  containerId: string | null;
  /** runtime prefix of the container scope: cri-containerd, crio, docker; null for plain cgroupfs ids */
  runtime: string | null;
  /** anything below the container cgroup (a sub-cgroup the container made itself) */
  rest: string;
}

/**
 * The names kubelet and the runtimes give kubepods cgroups, in one table: the
 * walker (cgroups.ts) matches directory names with it, parseKubepodsPath whole paths.
 */
// An API-server UUID (dashes, or underscores in systemd slice names) or a static pod's 32-hex hash.
const UID = '(?:[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}|[0-9a-f]{32})';
export const KUBEPODS_NAMES = {
  /** kubepods.slice, or with a prefix from a custom cgroup root (kubelet-kubepods.slice) */
  systemdRoot: /^(?:[A-Za-z0-9_]+-)*kubepods\.slice$/,
  systemdQos: /^(?:[A-Za-z0-9_]+-)*kubepods-(burstable|besteffort)\.slice$/,
  /** <prefix>kubepods[-qos]-pod<uid with _>.slice: group 1 the QoS (absent: guaranteed), group 2 the UID */
  systemdPod: new RegExp(`^(?:[A-Za-z0-9_]+-)*kubepods(?:-(burstable|besteffort))?-pod(${UID})\\.slice$`),
  /** group 1 the runtime, group 2 the container ID */
  systemdContainer: /^(cri-containerd|crio|docker)-([0-9a-f]{64})\.scope$/,
  cgroupfsRoot: 'kubepods',
  cgroupfsQos: ['burstable', 'besteffort'] as readonly string[],
  cgroupfsPod: new RegExp(`^pod(${UID})$`),
  cgroupfsContainer: /^(?:(cri-containerd|crio|docker)-)?([0-9a-f]{64})$/,
} as const;
const { systemdRoot: SYSTEMD_ROOT, systemdQos: SYSTEMD_QOS, systemdPod: SYSTEMD_POD, systemdContainer: SYSTEMD_CONTAINER } = KUBEPODS_NAMES;
const { cgroupfsPod: CGROUPFS_POD, cgroupfsContainer: CGROUPFS_CONTAINER } = KUBEPODS_NAMES;

export function parseKubepodsPath(path: string): KubepodsPath | null {
  const parts = path.split('/').filter((p) => p !== '');
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (SYSTEMD_ROOT.test(p)) return systemd(parts, i);
    if (p === KUBEPODS_NAMES.cgroupfsRoot) return cgroupfs(parts, i);
  }
  return null;
}

function systemd(parts: string[], root: number): KubepodsPath | null {
  let i = root + 1;
  let qos: QosClass = 'guaranteed';
  const q = SYSTEMD_QOS.exec(parts[i] ?? '');
  if (q) {
    qos = q[1] as QosClass;
    i++;
  }
  const pod = SYSTEMD_POD.exec(parts[i] ?? '');
  if (!pod) return null;
  // The pod slice must agree with its parent about the QoS class.
  if ((pod[1] ?? 'guaranteed') !== qos) return null;
  const podCgroup = '/' + parts.slice(0, i + 1).join('/');
  i++;
  const c = SYSTEMD_CONTAINER.exec(parts[i] ?? '');
  return {
    driver: 'systemd',
    qos,
    podUid: normUid(pod[2]!),
    podCgroup,
    containerId: c ? c[2]! : null,
    runtime: c ? c[1]! : null,
    rest: c ? rest(parts, i + 1) : rest(parts, i),
  };
}

function cgroupfs(parts: string[], root: number): KubepodsPath | null {
  let i = root + 1;
  let qos: QosClass = 'guaranteed';
  const q = parts[i];
  if (q === 'burstable' || q === 'besteffort') {
    qos = q;
    i++;
  }
  const pod = CGROUPFS_POD.exec(parts[i] ?? '');
  if (!pod) return null;
  const podCgroup = '/' + parts.slice(0, i + 1).join('/');
  i++;
  const c = CGROUPFS_CONTAINER.exec(parts[i] ?? '');
  return {
    driver: 'cgroupfs',
    qos,
    podUid: normUid(pod[1]!),
    podCgroup,
    containerId: c ? c[2]! : null,
    runtime: c ? (c[1] ?? null) : null,
    rest: c ? rest(parts, i + 1) : rest(parts, i),
  };
}

/** A UID as the API server spells it: dashes, lowercase. */
export const normUid = (u: string) => u.replace(/_/g, '-').toLowerCase();
const rest = (parts: string[], from: number) => (from < parts.length ? '/' + parts.slice(from).join('/') : '');
