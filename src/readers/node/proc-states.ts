/**
 * Processes in D state (uninterruptible sleep: waiting on a dead NFS server or a
 * block device that does not answer) and Z state (zombies whose parent does not
 * reap them: a pod whose PID 1 is not an init), found by a walk of /proc/<pid>/stat
 * and mapped to pods by /proc/<pid>/cgroup.
 *
 * The walk is bounded by a number of pids and by time (a node may run 100,000
 * processes) and yields to the event loop between batches; where it stopped is said
 * in `cut`. Its budget counts its own work, not the waits between its slices: on a
 * starved node the loop's other work and the CPU's absence would otherwise spend it, and
 * /proc lists pids in ascending order, so the pods' processes, the newest, would be the
 * ones left out. The request's signal and a wall-time bound end a walk that waits too long.
 * stat, cgroup and wchan are read without taking the target's mmap_lock
 * (unlike cmdline, see ../proc/limiter.ts), so they do not block on the process's
 * memory map. Every stat is read synchronously (hostfs/read-sync.ts: procfs never waits
 * on a disk), 128 pids between yields at most (fewer past lib/turns' SLICE_MS, each slice in its
 * own turn of the loop: lib/turns' Slice): through libuv's pool the same walk cost ~0.4 s
 * of a 1,000-container node's scrape, most of it queueing behind other reads, for a
 * few milliseconds of syscalls. The few D/Z processes' cgroup and wchan stay async.
 * Only thread-group leaders are looked at: a D-state thread of a process whose
 * main thread sleeps normally is not seen (walking every task would cost a
 * multiple of this).
 */
import type { ProcessStates, StuckByPod, StuckProcess } from '../../model/node.js';
import { parseKubepodsPath } from '../cgroup/kubepods-path.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { readFilesInSync } from '../hostfs/read-sync.js';
import { readInNoLink } from '../hostfs/safe-read.js';
import { parseProcStat } from '../proc/parse.js';
import { Slice } from '../../lib/turns.js';

const PROC_STATE_LIMITS = {
  /** pids whose stat is read per walk */
  maxPids: 65_536,
  /** the stat walk's own work, in slices, the waits between them not counted */
  budgetMs: 1500,
  /** one walk's whole time, waits and the D/Z processes' cgroup reads included */
  wallMs: 10_000,
  /** stat reads between two yields to the event loop */
  batch: 128,
  /** D/Z processes whose cgroup (and wchan) is read: the counts by pod cover these */
  maxDetailed: 2048,
  /** of those, returned with their details */
  maxSamples: 50,
  /** distinct (pod, container, state) rows */
  maxRows: 500,
} as const;

const PID_RE = /^[1-9]\d{0,9}$/;

/** The v2 line of /proc/<pid>/cgroup ("0::/kubepods.slice/..."); null on a v1-only host. */
function parseProcCgroup(text: string | null): string | null {
  if (text === null) return null;
  for (const line of text.split('\n', 64)) if (line.startsWith('0::')) return line.slice(3).trim() || '/';
  return null;
}

interface ProcWalk {
  states: ProcessStates;
  /** pid of a process named kubelet (its cmdline names the config file), null when none was seen */
  kubeletPid: number | null;
  /** pids of processes named containerd, at most 4 (Talos runs two: its system one and the CRI one) */
  containerdPids?: number[];
}

export async function walkProcStates(fs: HostFs, limits: Partial<Record<keyof typeof PROC_STATE_LIMITS, number>> = {}, signal?: AbortSignal): Promise<ProcWalk> {
  const L = { ...PROC_STATE_LIMITS, ...limits };
  const t0 = Date.now();
  const procDir = await fs.dir('/proc');
  const entries = (await fs.readdir(procDir)) ?? [];
  const pids: string[] = [];
  for (const e of entries) if (e.isDirectory() && PID_RE.test(e.name)) pids.push(e.name);
  let cut: string | null = null;
  if (pids.length > L.maxPids) {
    cut = `${pids.length} processes; only the first ${L.maxPids} were looked at`;
    pids.length = L.maxPids;
  }
  const stuck: { pid: number; comm: string; state: 'D' | 'Z'; ppid: number }[] = [];
  let scanned = 0;
  let kubeletPid: number | null = null;
  const containerdPids: number[] = [];
  let next = 0;
  // `batch` pids a slice, fewer when they take long (128 stat reads hold a loaded 2-core machine ~40 ms)
  const slice = new Slice(L.batch);
  const stopReason = () => (signal?.aborted ? 'the request ended' : slice.workedMs > L.budgetMs ? `the walk's ${L.budgetMs} ms budget was spent` : Date.now() - t0 > L.wallMs ? `the walk waited past ${L.wallMs} ms` : null);
  let stopped = stopReason();
  if (stopped === null) {
    while (next < pids.length) {
      if (slice.due()) {
        await slice.pause();
        if ((stopped = stopReason()) !== null) break;
      }
      const name = pids[next++]!;
      let text: string | null;
      try {
        text = readFilesInSync(fs.child(procDir, name), ['stat'], 4096)[0]!;
      } catch {
        continue; // refused, or not a plain directory: not a process to count
      }
      const st = parseProcStat(text); // null when the process is gone meanwhile
      if (!st) continue;
      scanned++;
      if (st.comm === 'kubelet' && (kubeletPid === null || st.pid < kubeletPid)) kubeletPid = st.pid;
      if (st.comm === 'containerd' && containerdPids.length < 4) containerdPids.push(st.pid);
      if (st.state === 'D' || st.state === 'Z') stuck.push({ pid: st.pid, comm: st.comm, state: st.state, ppid: st.ppid });
    }
  }
  if (next < pids.length) cut = `stopped after ${scanned} of ${pids.length} processes: ${stopped}`;

  stuck.sort((a, b) => a.pid - b.pid);
  const detailed = stuck.slice(0, L.maxDetailed);
  if (stuck.length > detailed.length) cut = [cut, `${stuck.length - detailed.length} D/Z processes not attributed to a pod (more than ${L.maxDetailed})`].filter(Boolean).join('; ');
  const rows = new Map<string, StuckByPod>();
  const samples: StuckProcess[] = [];
  let i = 0;
  const attributing = new Slice(64);
  for (const p of detailed) {
    if (attributing.due()) await attributing.pause();
    if (Date.now() - t0 > L.wallMs || signal?.aborted) {
      cut = [cut, `${detailed.length - i} D/Z processes not attributed (time)`].filter(Boolean).join('; ');
      break;
    }
    i++;
    const dir = fs.child(procDir, String(p.pid));
    const [cg, wchan] = await Promise.all([
      readInNoLink(fs, dir, 'cgroup', 16 * 1024).catch(() => null),
      p.state === 'D' && samples.length < L.maxSamples ? readInNoLink(fs, dir, 'wchan', 256).catch(() => null) : Promise.resolve(null),
    ]);
    const cgroup = parseProcCgroup(cg);
    const kp = cgroup ? parseKubepodsPath(cgroup) : null;
    const podUid = kp?.podUid ?? null;
    const containerId = kp?.containerId ?? null;
    const key = `${podUid}/${containerId}/${p.state}`;
    const row = rows.get(key);
    if (row) row.count++;
    else if (rows.size < L.maxRows) rows.set(key, { podUid, containerId, state: p.state, count: 1 });
    if (samples.length < L.maxSamples) {
      // wchan is "0" for a running task, a symbol otherwise; hostile? no (kernel-written), still bounded
      const w = wchan?.trim() ?? '';
      samples.push({ ...p, wchan: w && w !== '0' ? w.slice(0, 128) : null, cgroup, podUid, containerId });
    }
  }
  return {
    states: {
      scanned,
      dState: stuck.filter((p) => p.state === 'D').length,
      zState: stuck.filter((p) => p.state === 'Z').length,
      byPod: [...rows.values()].sort((a, b) => b.count - a.count),
      samples,
      cut,
    },
    kubeletPid,
    containerdPids,
  };
}
