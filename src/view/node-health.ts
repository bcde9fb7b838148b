/**
 * What the node itself is short of: memory, PIDs, disk and inodes, CPU/memory/io
 * pressure, plus kernel, uptime, cgroup mode and kubelet's own health check.
 * Each part reads on its own; one missing file gives nulls, not a failure, and one
 * that cannot be read (a directory or a link loop in place of a file, EACCES, EIO)
 * or holds malformed lines gives nulls too and is named in `warnings`.
 */
import type { DiskUse, NodeHealth, PidUse } from '../model/node.js';
import type { CgroupMode } from '../model/cgroup.js';
import { CGROUP_MOUNT, detectMode } from '../readers/cgroup/cgroups.js';
import { parsePsi, round } from '../readers/cgroup/parse.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import { parseLoadavg, parseMeminfo, parseUptime } from '../readers/proc/parse.js';
import { countProcesses } from '../readers/proc/proc.js';
import { kubeletHealthz } from '../readers/node/kubelet.js';
import { statfs, statfsCalls } from '../readers/node/statfs.js';
import type { Guard } from '../lib/guard.js';

export const NODE_DISKS = ['/', '/var/lib/containerd', '/var/lib/kubelet'] as const;

const errText = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code ?? (err as Error | null)?.message ?? String(err);

/** One read of one part: what it cannot read becomes `fallback` and a warning naming it, never a failure of the whole. */
async function part<T>(what: string, read: () => Promise<T>, fallback: T, warnings: string[] | undefined): Promise<T> {
  try {
    return await read();
  } catch (err) {
    warnings?.push(`${what}: unreadable (${errText(err)}), skipped`);
    return fallback;
  }
}

const readPart = (fs: HostFs, hostPath: string, maxBytes: number, warnings: string[] | undefined) =>
  part(hostPath, () => fs.readFile(hostPath, maxBytes), null, warnings);

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : round(a / b, 6));
const single = (t: string | null) => {
  const n = t === null ? NaN : Number(t.trim());
  return Number.isFinite(n) ? n : null;
};

const NO_FIGURES = {
  totalBytes: null,
  freeBytes: null,
  availableBytes: null,
  usedBytes: null,
  availableRatio: null,
  inodesTotal: null,
  inodesFree: null,
  inodesUsed: null,
  inodesFreeRatio: null,
} as const;

export async function diskUse(fs: HostFs, path: string, warnings?: string[], guard: Guard = statfsCalls): Promise<DiskUse> {
  // guarded: a hung mount never returns from statfs (readers/node/statfs.ts); it is reported, not waited for
  const r = await statfs(fs, path, guard);
  if (!r.ok) {
    // not read is not absent: a disk that missed its deadline says so, and nothing is concluded from it
    const why = r.timedOut || r.cause === null ? r.error : `unreadable (${r.error})`;
    warnings?.push(`statfs ${path}: ${why}, not read`);
    return { path, present: null, notRead: why, ...NO_FIGURES };
  }
  const st = r.value;
  if (!st) return { path, present: false, ...NO_FIGURES };
  const total = st.blocks * st.bsize;
  const free = st.bfree * st.bsize;
  const avail = st.bavail * st.bsize;
  // Filesystems without a fixed inode table (btrfs) report 0 inodes: no ratio then.
  const inodesTotal = st.files;
  return {
    path,
    present: true,
    totalBytes: total,
    freeBytes: free,
    availableBytes: avail,
    usedBytes: total - free,
    availableRatio: ratio(avail, total),
    inodesTotal,
    inodesFree: st.ffree,
    inodesUsed: inodesTotal - st.ffree,
    inodesFreeRatio: ratio(st.ffree, inodesTotal),
  };
}

export async function pidUse(fs: HostFs, warnings?: string[]): Promise<PidUse> {
  const [processes, loadavg, pidMax, threadsMax] = await Promise.all([
    part('/proc (counting processes)', () => countProcesses(fs), null, warnings),
    readPart(fs, '/proc/loadavg', 4096, warnings),
    readPart(fs, '/proc/sys/kernel/pid_max', 4096, warnings),
    readPart(fs, '/proc/sys/kernel/threads-max', 4096, warnings),
  ]);
  const threads = parseLoadavg(loadavg)?.threads ?? null;
  const pm = single(pidMax);
  const tm = single(threadsMax);
  return { processes, threads, pidMax: pm, threadsMax: tm, pidRatio: ratio(threads, pm), threadsRatio: ratio(threads, tm) };
}

export async function nodeHealth(fs: HostFs, opts: { kubeletHealthzUrl: string; kubeletTimeoutMs: number; warnings?: string[] }): Promise<NodeHealth> {
  const w = opts.warnings;
  const [release, uptime, loadavg, meminfo, cpuP, memP, ioP, pids, disks, cgroup, kubelet] = await Promise.all([
    readPart(fs, '/proc/sys/kernel/osrelease', 4096, w),
    readPart(fs, '/proc/uptime', 4096, w),
    readPart(fs, '/proc/loadavg', 4096, w),
    readPart(fs, '/proc/meminfo', 64 * 1024, w),
    readPart(fs, '/proc/pressure/cpu', 4096, w),
    readPart(fs, '/proc/pressure/memory', 4096, w),
    readPart(fs, '/proc/pressure/io', 4096, w),
    pidUse(fs, w),
    Promise.all(NODE_DISKS.map((p) => diskUse(fs, p, w))),
    detectMode(fs).catch((err: unknown): CgroupMode => {
      w?.push(`${CGROUP_MOUNT}: unreadable (${errText(err)}), cgroup mode unknown`);
      return { version: 'unknown', fsType: null, drivers: [], reason: `${CGROUP_MOUNT} could not be read: ${errText(err)}` };
    }),
    kubeletHealthz(opts.kubeletHealthzUrl, opts.kubeletTimeoutMs),
  ]);
  const psi = (text: string | null, file: string) => parsePsi(text, () => w?.push(`${file}: malformed lines skipped`));
  const load = parseLoadavg(loadavg);
  const mem = parseMeminfo(meminfo);
  const total = mem?.get('MemTotal') ?? null;
  const available = mem?.get('MemAvailable') ?? null;
  return {
    kernelRelease: release?.trim() || null,
    uptimeSeconds: parseUptime(uptime)?.uptimeSeconds ?? null,
    load: load && { load1: load.load1, load5: load.load5, load15: load.load15, runnable: load.runnable },
    memory: { totalBytes: total, availableBytes: available, availableRatio: ratio(available, total) },
    // /proc/pressure is absent when the kernel runs without psi=1 (or CONFIG_PSI): nulls then.
    pressure: { cpu: psi(cpuP, '/proc/pressure/cpu'), memory: psi(memP, '/proc/pressure/memory'), io: psi(ioP, '/proc/pressure/io') },
    pids,
    disks,
    cgroup,
    kubelet,
  };
}
