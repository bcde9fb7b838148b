/**
 * Kernel log problems (rules/kernel-problems.ts's table) found in /dev/kmsg, each
 * attributed to a pod where the kernel names a task: /proc/<pid>/cgroup → kubepods
 * path → pod UID and container id. The pid a record names may have exited, or been
 * reused by another process since: a process that started after the record, or whose
 * name differs from the one the kernel printed, is not the one it named, and the
 * problem stays unattributed with the reason.
 *
 * Matching is linear: the table's literal phrases found with indexOf, values taken by
 * hand-written scanners (readers/kmsg/named.ts). Only facility-0 records are the
 * kernel's: a record a process writes to /dev/kmsg gets LOG_USER (or its own facility)
 * from the kernel, so a tenant cannot forge a hung task of another pod.
 */
import { nextTurn } from '../lib/turns.js';
import type { QosClass } from '../model/cgroup.js';
import { containsInOrder } from '../lib/phrases.js';
import { parseKubepodsPath } from '../readers/cgroup/kubepods-path.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import { formatMicros } from '../readers/journal/time.js';
import { deviceNamed, hungTaskNamed, NOTHING_NAMED, netnsNamed, parseCpuLine, softLockupNamed, type Named } from '../readers/kmsg/named.js';
import type { KmsgRecord } from '../readers/kmsg/parse.js';
import { bootWallUs, type KmsgReader, type KmsgRing } from '../readers/kmsg/reader.js';
import { parseProcStat } from '../readers/proc/parse.js';
import { KERNEL_PROBLEM_LIMITS, KERNEL_PROBLEMS, type KernelPhrase, type KernelProblemKind } from '../rules/kernel-problems.js';

/** One matched record, with what it names. */
interface KernelProblem extends Named {
  id: string;
  seq: number;
  /** µs since boot */
  tsUsec: number;
  level: number;
  /** the record's text, cut at excerptChars */
  text: string;
  /** set taint letters from the report's "Tainted:" (e.g. "DL"), "" for "Not tainted", null when not printed */
  taint: string | null;
  /** following records that belong to the report and were used (the CPU/PID/Comm line) */
  context: Array<{ seq: number; text: string }>;
}

interface KernelScan {
  problems: KernelProblem[];
  /** records matched per kind, including those not kept */
  counts: Record<string, number>;
  /** records scanned (facility 0) */
  scanned: number;
}

const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);

function phraseMatches(ph: KernelPhrase, text: string): boolean {
  if (typeof ph === 'string') return text.includes(ph);
  if ('prefix' in ph) return text.startsWith(ph.prefix);
  return containsInOrder(text, ph);
}

/** The first row whose phrase the text holds, or null. Linear in the (cut) text. */
export function matchKernelProblem(text: string): KernelProblemKind | null {
  const m = cut(text, KERNEL_PROBLEM_LIMITS.matchChars);
  for (const k of KERNEL_PROBLEMS) if (k.phrases.some((ph) => phraseMatches(ph, m))) return k;
  return null;
}

/** What the record of a problem of kind `k` names, by the kind's attribution. */
function named(k: KernelProblemKind, t: string): Named {
  if (k.id === 'kernel-hung-task') return hungTaskNamed(t);
  if (k.id === 'kernel-soft-lockup') return softLockupNamed(t);
  if (k.attribution === 'device') return deviceNamed(t);
  if (k.attribution === 'netns') return netnsNamed(t);
  return NOTHING_NAMED;
}

/**
 * Every problem in the records (oldest first), facility 0 only. Yields to the event
 * loop every `chunk` records; stops early (with what it found) when `signal` aborts.
 */
export async function scanKernelProblems(records: readonly KmsgRecord[], signal?: AbortSignal): Promise<KernelScan> {
  const L = KERNEL_PROBLEM_LIMITS;
  const byKind = new Map<string, KernelProblem[]>();
  const counts: Record<string, number> = {};
  let scanned = 0;
  /** records that belong to a report already taken (the "Oops:" line after "BUG: kernel NULL pointer dereference") */
  const taken = new Set<number>();
  for (let i = 0; i < records.length; i++) {
    if (i > 0 && i % L.chunk === 0) {
      await nextTurn('plain');
      if (signal?.aborted) break;
    }
    const r = records[i]!;
    if (r.facility !== 0 || taken.has(i)) continue;
    scanned++;
    const text = cut(r.text, L.matchChars);
    const k = matchKernelProblem(text);
    if (!k) continue;
    counts[k.id] = (counts[k.id] ?? 0) + 1;
    const n = named(k, text);
    const p: KernelProblem = { id: k.id, seq: r.seq, tsUsec: r.tsUsec, level: r.level, text: cut(text, L.excerptChars), ...n, taint: null, context: [] };
    // an oops or lockup report goes on with "CPU: n PID: p Comm: c [Not] tainted..." (dump_stack / show_regs)
    if (k.attribution === 'context-pid' || k.id === 'kernel-soft-lockup') {
      for (let j = i + 1; j < records.length && j <= i + L.contextRecords; j++) {
        const c = records[j]!;
        if (c.facility !== 0) continue;
        const ct = cut(c.text, L.matchChars);
        const again = matchKernelProblem(ct);
        if (again && again.id !== k.id) break; // the next report
        if (again) {
          // one oops prints more than one header ("BUG: ..." then "Oops: ..."): the same report
          taken.add(j);
          p.context.push({ seq: c.seq, text: cut(ct, L.excerptChars) });
          continue;
        }
        const cpu = parseCpuLine(ct);
        if (!cpu) continue;
        if (p.pid === null) {
          p.pid = cpu.pid;
          p.comm = cpu.comm;
        }
        p.taint = cpu.taint;
        p.context.push({ seq: c.seq, text: cut(ct, L.excerptChars) });
        break;
      }
    }
    const list = byKind.get(k.id) ?? [];
    list.push(p);
    if (list.length > L.keepPerKind) list.shift();
    byKind.set(k.id, list);
  }
  const problems = [...byKind.values()].flat().sort((a, b) => a.seq - b.seq);
  return { problems, counts, scanned };
}

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

const ATTRIBUTION_LIMITS = {
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
