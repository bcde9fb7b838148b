/**
 * What the node itself is short of: memory, PIDs, disk and inodes, CPU/memory/io
 * pressure, plus kernel, uptime, cgroup mode and kubelet's own health check.
 * Each part reads on its own; one missing file gives nulls, not a failure.
 */
import type { DiskUse, NodeHealth, PidUse } from '../../model/node.js';
import { detectMode } from '../cgroup/cgroups.js';
import { round } from '../cgroup/parse.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { parseLoadavg, parseMeminfo, parsePressure, parseUptime } from '../proc/parse.js';
import { countProcesses } from '../proc/proc.js';
import { kubeletHealthz } from './kubelet.js';

export const NODE_DISKS = ['/', '/var/lib/containerd', '/var/lib/kubelet'] as const;

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : round(a / b, 6));
const single = (t: string | null) => {
  const n = t === null ? NaN : Number(t.trim());
  return Number.isFinite(n) ? n : null;
};

export async function diskUse(fs: HostFs, path: string): Promise<DiskUse> {
  const st = await fs.statfs(path);
  if (!st) {
    return {
      path,
      present: false,
      totalBytes: null,
      freeBytes: null,
      availableBytes: null,
      usedBytes: null,
      availableRatio: null,
      inodesTotal: null,
      inodesFree: null,
      inodesUsed: null,
      inodesFreeRatio: null,
    };
  }
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

export async function pidUse(fs: HostFs): Promise<PidUse> {
  const [processes, loadavg, pidMax, threadsMax] = await Promise.all([
    countProcesses(fs),
    fs.readFile('/proc/loadavg', 4096),
    fs.readFile('/proc/sys/kernel/pid_max', 4096),
    fs.readFile('/proc/sys/kernel/threads-max', 4096),
  ]);
  const threads = parseLoadavg(loadavg)?.threads ?? null;
  const pm = single(pidMax);
  const tm = single(threadsMax);
  return { processes, threads, pidMax: pm, threadsMax: tm, pidRatio: ratio(threads, pm), threadsRatio: ratio(threads, tm) };
}

export async function nodeHealth(fs: HostFs, opts: { kubeletHealthzUrl: string; kubeletTimeoutMs?: number }): Promise<NodeHealth> {
  const [release, uptime, loadavg, meminfo, cpuP, memP, ioP, pids, disks, cgroup, kubelet] = await Promise.all([
    fs.readFile('/proc/sys/kernel/osrelease', 4096),
    fs.readFile('/proc/uptime', 4096),
    fs.readFile('/proc/loadavg', 4096),
    fs.readFile('/proc/meminfo', 64 * 1024),
    fs.readFile('/proc/pressure/cpu', 4096),
    fs.readFile('/proc/pressure/memory', 4096),
    fs.readFile('/proc/pressure/io', 4096),
    pidUse(fs),
    Promise.all(NODE_DISKS.map((p) => diskUse(fs, p))),
    detectMode(fs),
    kubeletHealthz(opts.kubeletHealthzUrl, opts.kubeletTimeoutMs ?? 1000),
  ]);
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
    pressure: { cpu: parsePressure(cpuP), memory: parsePressure(memP), io: parsePressure(ioP) },
    pids,
    disks,
    cgroup,
    kubelet,
  };
}
