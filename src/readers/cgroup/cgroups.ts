/**
 * The cgroup v2 source: which cgroup mode the host runs and where the kubepods
 * cgroups are (both kubelet drivers); what each one's interface files say is
 * read in stats.ts.
 *
 * Every cgroup directory is resolved once (HostFs.dir / child) and its files are
 * then opened with readIn (O_NOFOLLOW, no path walk), so a node with a thousand
 * containers costs one open per file. Cgroups that vanish between the walk and
 * the read (a container that just died) are skipped, not errors.
 */
import type { Dirent } from 'node:fs';
import type { CgroupDriver, CgroupMode, KubeCgroup, QosClass } from '../../model/cgroup.js';
import type { HostFs, ResolvedDir } from '../hostfs/hostfs.js';
import { nextTurn, Slice, SLICE_MS } from '../../lib/turns.js';
import { readdirInSync } from '../hostfs/read-sync.js';
import { KUBEPODS_NAMES, normUid } from './kubepods-path.js';

export const CGROUP_MOUNT = '/sys/fs/cgroup';

/** statfs f_type magics (linux/magic.h) */
const FS_MAGIC: Record<number, string> = {
  0x63677270: 'cgroup2fs',
  0x27e0eb: 'cgroupfs',
  0x01021994: 'tmpfs',
  0xef53: 'ext2/ext3',
  0x9123683e: 'btrfs',
  0x58465342: 'xfs',
  0x794c7630: 'overlayfs',
};

/** A kubepods cgroup with its directory resolved under the host root. */
export interface FoundCgroup extends KubeCgroup {
  dir: ResolvedDir;
}

const N = KUBEPODS_NAMES;

/** Directories listed between two yields of the walk at most (fewer when they take longer than SLICE_MS). */
const WALK_SLICE = 64;

/**
 * cgroup v2 (unified), hybrid (v1 controllers, v2 only for systemd at /sys/fs/cgroup/unified)
 * or v1. A tree generated for tests is a plain directory: there the presence of
 * cgroup.controllers at the mount point decides, as it does on a real v2 host.
 */
export async function detectMode(fs: HostFs): Promise<CgroupMode> {
  const [st, controllers, kubepods] = await Promise.all([
    fs.statfs(CGROUP_MOUNT),
    fs.readFile(`${CGROUP_MOUNT}/cgroup.controllers`, 4096),
    findKubepodsRoots(fs),
  ]);
  const fsType = st ? (FS_MAGIC[st.type] ?? `0x${st.type.toString(16)}`) : null;
  const drivers = kubepods.map((k) => k.driver);
  if (fsType === 'cgroup2fs' || controllers !== null) return { version: 'v2', fsType, drivers, reason: null };
  if (st === null) {
    return { version: 'unknown', fsType, drivers, reason: `${CGROUP_MOUNT} is not there under the host root` };
  }
  const unified = await fs.readFile(`${CGROUP_MOUNT}/unified/cgroup.controllers`, 4096);
  if (unified !== null || (await fs.statfs(`${CGROUP_MOUNT}/unified`))?.type === 0x63677270) {
    return {
      version: 'hybrid',
      fsType,
      drivers,
      reason: `hybrid cgroup hierarchy: ${CGROUP_MOUNT} is ${fsType} with v1 controllers, cgroup2 only at ${CGROUP_MOUNT}/unified; nodetruth reads cgroup v2 only (boot with systemd.unified_cgroup_hierarchy=1)`,
    };
  }
  const v1 = (await Promise.all(['memory', 'cpu', 'pids'].map((c) => fs.exists(`${CGROUP_MOUNT}/${c}`)))).some(Boolean);
  if (v1) {
    return {
      version: 'v1',
      fsType,
      drivers,
      reason: `cgroup v1: ${CGROUP_MOUNT} is ${fsType} with per-controller hierarchies; nodetruth reads cgroup v2 only (boot with systemd.unified_cgroup_hierarchy=1)`,
    };
  }
  return { version: 'unknown', fsType, drivers, reason: `${CGROUP_MOUNT} (${fsType}) has neither cgroup.controllers nor v1 controllers` };
}

async function findKubepodsRoots(fs: HostFs): Promise<{ driver: CgroupDriver; dir: ResolvedDir }[]> {
  const root = await fs.dir(CGROUP_MOUNT);
  const entries = await fs.readdir(root);
  if (!entries) return [];
  const out: { driver: CgroupDriver; dir: ResolvedDir }[] = [];
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    if (e.name === 'kubepods.slice') out.push({ driver: 'systemd', dir: fs.child(root, e.name) });
    else if (e.name === 'kubepods') out.push({ driver: 'cgroupfs', dir: fs.child(root, e.name) });
  }
  return out.sort((a, b) => a.driver.localeCompare(b.driver)).reverse(); // systemd first
}

const cgroupPath = (dir: ResolvedDir) => dir.hostPath.slice(CGROUP_MOUNT.length) || '/';
const dirs = (entries: Dirent[] | null) => (entries ?? []).filter((e) => e.isDirectory());

const errText = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/**
 * The subdirectories of one cgroup; one that cannot be listed (EACCES under an LSM,
 * EIO, ...) is skipped with a warning instead of failing the whole walk. Listed
 * synchronously (cgroupfs is served from memory: a few microseconds a directory, where
 * the same through libuv's pool took four round trips); the walk yields between them.
 */
function subdirs(dir: ResolvedDir, warnings: string[] | undefined): Dirent[] {
  try {
    const entries = readdirInSync(dir);
    // cgroupfs holds no links: one under kubepods was planted (a loop, a way out); never followed, named
    for (const e of entries ?? []) {
      if (e.isSymbolicLink()) warnings?.push(`cgroup ${cgroupPath(dir)}/${e.name}: a symbolic link where a cgroup directory belongs, skipped`);
    }
    return dirs(entries);
  } catch (err) {
    warnings?.push(`cgroup ${cgroupPath(dir)}: cannot list (${errText(err)}), skipped`);
    return [];
  }
}

interface PodDir {
  driver: CgroupDriver;
  qos: QosClass;
  podUid: string;
  dir: ResolvedDir;
}

/**
 * Every pod cgroup and, unless `podsOnly`, every container cgroup under kubepods,
 * for both drivers. Only real directories are followed (readdir's d_type), never
 * symlinks. Pods come before their containers; order is otherwise the kernel's.
 */
export async function walkKubepods(fs: HostFs, opts: { podsOnly?: boolean; podUid?: string; warnings?: string[] } = {}): Promise<FoundCgroup[]> {
  const pods: PodDir[] = [];
  const warnings = opts.warnings;
  // directories listed between two yields: WALK_SLICE, or fewer when they take longer than SLICE_MS
  const slice = new Slice(WALK_SLICE, SLICE_MS, () => nextTurn('plain'));
  for (const { driver, dir } of await findKubepodsRoots(fs)) {
    if (slice.due()) await slice.pause();
    const top = subdirs(dir, warnings);
    const qosDirs: { qos: QosClass; dir: ResolvedDir }[] = [];
    for (const e of top) {
      if (driver === 'systemd') {
        const g = N.systemdPod.exec(e.name);
        if (g && g[1] === undefined) pods.push({ driver, qos: 'guaranteed', podUid: normUid(g[2]!), dir: fs.child(dir, e.name) });
        const q = N.systemdQos.exec(e.name);
        if (q) qosDirs.push({ qos: q[1] as QosClass, dir: fs.child(dir, e.name) });
      } else {
        const g = N.cgroupfsPod.exec(e.name);
        if (g) pods.push({ driver, qos: 'guaranteed', podUid: normUid(g[1]!), dir: fs.child(dir, e.name) });
        if (N.cgroupfsQos.includes(e.name)) qosDirs.push({ qos: e.name as QosClass, dir: fs.child(dir, e.name) });
      }
    }
    for (const q of qosDirs) {
      if (slice.due()) await slice.pause();
      for (const e of subdirs(q.dir, warnings)) {
        if (driver === 'systemd') {
          const m = N.systemdPod.exec(e.name);
          if (m && m[1] === q.qos) pods.push({ driver, qos: q.qos, podUid: normUid(m[2]!), dir: fs.child(q.dir, e.name) });
        } else {
          const m = N.cgroupfsPod.exec(e.name);
          if (m) pods.push({ driver, qos: q.qos, podUid: normUid(m[1]!), dir: fs.child(q.dir, e.name) });
        }
      }
    }
  }
  const wanted = opts.podUid === undefined ? pods : pods.filter((p) => p.podUid === opts.podUid);
  const podCgroup = (p: PodDir): FoundCgroup => ({
    kind: 'pod',
    path: cgroupPath(p.dir),
    driver: p.driver,
    qos: p.qos,
    podUid: p.podUid,
    containerId: null,
    runtime: null,
    dir: p.dir,
  });
  if (opts.podsOnly) return wanted.map(podCgroup);
  const out: FoundCgroup[] = [];
  for (const p of wanted) {
    if (slice.due()) await slice.pause();
    out.push(podCgroup(p));
    for (const e of subdirs(p.dir, warnings)) {
      const m = (p.driver === 'systemd' ? N.systemdContainer : N.cgroupfsContainer).exec(e.name);
      if (!m) continue; // crio-conmon-<id>.scope, anything else a runtime put there
      const dir = fs.child(p.dir, e.name);
      out.push({
        kind: 'container',
        path: cgroupPath(dir),
        driver: p.driver,
        qos: p.qos,
        podUid: p.podUid,
        containerId: m[2]!,
        runtime: m[1] ?? null,
        dir,
      });
    }
  }
  return out;
}
