/**
 * Kernel log problems (problems.ts's table) found in /dev/kmsg, each attributed to
 * a pod where the kernel names a task: /proc/<pid>/cgroup → kubepods path → pod UID
 * and container id. The pid a record names may have exited, or been reused by
 * another process since: a process that started after the record, or whose name
 * differs from the one the kernel printed, is not the one it named, and the problem
 * stays unattributed with the reason.
 */
import type { QosClass } from '../model/cgroup.js';
import { parseKubepodsPath } from '../readers/cgroup/kubepods-path.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import { formatMicros } from '../readers/journal/time.js';
import { parseProcStat } from '../readers/proc/parse.js';
import { type KernelProblem, scanKernelProblems } from '../rules/kernel-problems.js';
import { bootWallUs, type KmsgReader, type KmsgRing } from '../readers/kmsg/reader.js';

export interface AttributedKernelProblem extends KernelProblem {
  /** wall-clock time of the record */
  time: string;
  /** the named task's cgroup (v2 path), when it still runs and is the same task */
  cgroup: string | null;
  podUid: string | null;
  containerId: string | null;
  qos: QosClass | null;
  /** why a named pid is not attributed (exited, reused, unreadable) */
  attribution: string | null;
}

export interface KernelProblems {
  problems: AttributedKernelProblem[];
  /** matched records per kind, including those not kept */
  counts: Record<string, number>;
  /** facility-0 records scanned; gaps: ring overruns seen while reading */
  scanned: number;
  gaps: number;
  warnings: string[];
}

export const ATTRIBUTION_LIMITS = {
  /** distinct pids whose /proc files are read per call (the newest problems first) */
  maxPids: 64,
  /** bytes of /proc/<pid>/cgroup (v1 hosts list a line per hierarchy) */
  cgroupBytes: 16 * 1024,
} as const;

/** USER_HZ: /proc/<pid>/stat counts start time in 1/100 s on every Linux ABI Kubernetes runs on. */
const TICKS_PER_SECOND = 100;

/** The kubepods path of a /proc/<pid>/cgroup text: the v2 line ("0::/...") first, else any hierarchy's. */
export function kubepodsCgroupOf(text: string): string | null {
  const lines = text.split('\n');
  const v2 = lines.find((l) => l.startsWith('0::'));
  const ordered = v2 ? [v2, ...lines] : lines;
  for (const l of ordered) {
    const c = l.indexOf(':', l.indexOf(':') + 1);
    if (c < 0) continue;
    const p = l.slice(c + 1);
    if (parseKubepodsPath(p)) return p;
  }
  return v2 ? v2.slice(3) : null;
}

export class KernelProblemsSource {
  constructor(
    private readonly kmsg: KmsgReader,
    private readonly hostFs: HostFs,
    private readonly bootUs: () => number = bootWallUs,
  ) {}

  /** `ring`: a read of the ring shared with other readers of the same moment (reader.ts readOnce); else this source reads it */
  async read(signal?: AbortSignal, ring: KmsgRing = this.kmsg): Promise<KernelProblems> {
    const items = await ring.readAll(signal);
    const records = [];
    let gaps = 0;
    for (const it of items) {
      if (it.kind === 'gap') gaps++;
      else records.push(it.record);
    }
    const scan = await scanKernelProblems(records, signal);
    const warnings: string[] = [];
    if (gaps > 0) warnings.push(`the kernel ring buffer overwrote records while they were read (${gaps} gaps): problems in them are not seen`);
    const boot = this.bootUs();
    const who = await this.tasks(scan.problems, boot, warnings);
    const problems = scan.problems.map((p): AttributedKernelProblem => {
      const t = p.pid !== null ? who.get(`${p.pid}/${p.seq}`) : undefined;
      const k = t?.cgroup ? parseKubepodsPath(t.cgroup) : null;
      return {
        ...p,
        time: formatMicros(boot + p.tsUsec),
        cgroup: t?.cgroup ?? null,
        podUid: k?.podUid ?? null,
        containerId: k?.containerId ?? null,
        qos: k?.qos ?? null,
        attribution: t?.why ?? null,
      };
    });
    return { problems, counts: scan.counts, scanned: scan.scanned, gaps, warnings };
  }

  /** /proc/<pid>/stat and cgroup of the named tasks, newest problems first, at most maxPids pids. */
  private async tasks(problems: readonly KernelProblem[], boot: number, warnings: string[]): Promise<Map<string, { cgroup: string | null; why: string | null }>> {
    const out = new Map<string, { cgroup: string | null; why: string | null }>();
    const named = problems.filter((p) => p.pid !== null).reverse();
    const pids = [...new Set(named.map((p) => p.pid!))];
    if (pids.length > ATTRIBUTION_LIMITS.maxPids) warnings.push(`${pids.length} tasks named by kernel problems; the newest ${ATTRIBUTION_LIMITS.maxPids} are attributed`);
    const read = new Map<number, { startUs: number | null; comm: string | null; cgroup: string | null } | null>();
    await Promise.all(
      pids.slice(0, ATTRIBUTION_LIMITS.maxPids).map(async (pid) => {
        try {
          const [stat, cg] = await Promise.all([this.hostFs.readFile(`/proc/${pid}/stat`), this.hostFs.readFile(`/proc/${pid}/cgroup`, ATTRIBUTION_LIMITS.cgroupBytes)]);
          const st = parseProcStat(stat);
          if (!st || cg === null) return read.set(pid, null);
          read.set(pid, { startUs: (st.startTicks / TICKS_PER_SECOND) * 1e6, comm: st.comm, cgroup: kubepodsCgroupOf(cg) });
        } catch (err) {
          read.set(pid, null);
          warnings.push(`/proc/${pid}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }),
    );
    for (const p of named) {
      const key = `${p.pid}/${p.seq}`;
      if (!read.has(p.pid!)) {
        out.set(key, { cgroup: null, why: 'not looked up (too many tasks named)' });
        continue;
      }
      const t = read.get(p.pid!);
      if (!t) {
        out.set(key, { cgroup: null, why: `pid ${p.pid} has exited` });
        continue;
      }
      // a task that started after the record is another one with the pid reused
      if (t.startUs !== null && t.startUs > p.tsUsec) {
        out.set(key, { cgroup: null, why: `pid ${p.pid} was reused: the running process started after the record (${formatMicros(boot + t.startUs)})` });
        continue;
      }
      // comm as printed: the kernel cuts it at 15 bytes (TASK_COMM_LEN); a thread may rename itself meanwhile
      if (p.comm !== null && t.comm !== null && p.comm.slice(0, 15) !== t.comm.slice(0, 15)) {
        out.set(key, { cgroup: null, why: `pid ${p.pid} is now "${t.comm.slice(0, 15)}", not "${p.comm.slice(0, 15)}" as the kernel named it` });
        continue;
      }
      out.set(key, { cgroup: t.cgroup, why: t.cgroup === null ? `pid ${p.pid}: no cgroup` : null });
    }
    return out;
  }
}
