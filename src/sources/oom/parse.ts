/**
 * OOM-killer reports in the kernel log, one kill per "Killed process" line
 * (mm/oom_kill.c, mm/memcontrol.c; format table in
 * shared/captures/kernel-journal/oom-format-strings.md). A report spans dozens
 * of records between "invoked oom-killer" and "Killed process" (stack,
 * Mem-Info, task table); only these lines carry facts:
 *
 *   <comm> invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
 *   memory: usage 32768kB, limit 32768kB, failcnt 28                    (memcg OOM only)
 *   oom-kill:constraint=…,nodemask=…,cpuset=…,mems_allowed=…,oom_memcg=<cg>|global_oom,task_memcg=<cg>,task=<comm>,pid=<n>,uid=<n>
 *   Memory cgroup out of memory: Killed process <pid> (<comm>) total-vm:…kB, anon-rss:…kB, file-rss:…kB, shmem-rss:…kB, UID:<n> pgtables:…kB oom_score_adj:<n>
 *
 * Pure: lines in, kills out. The rules are data, here.
 */
export const OOM_PATTERNS = {
  invoked: /^(.*) invoked oom-killer: gfp_mask=(0x[0-9a-f]+)(?:\(([^)]*)\))?, order=(-?\d+), oom_score_adj=(-?\d+)/,
  memcgUsage: /^memory: usage (\d+)kB, limit (\d+)kB, failcnt (\d+)/,
  summary:
    /^oom-kill:constraint=([A-Z_]+)(?:,nodemask=(.*?))?(?:,cpuset=(.*?),mems_allowed=(.*?))?,(?:oom_memcg=(.*?)|(global_oom)),task_memcg=(.*),task=(.*),pid=(\d+),uid=(\d+)$/,
  killed:
    /^(Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?): Killed process (\d+) \((.*)\) total-vm:(\d+)kB, anon-rss:(\d+)kB, file-rss:(\d+)kB, shmem-rss:(\d+)kB(?:, UID:(\d+) pgtables:(\d+)kB oom_score_adj:(-?\d+))?/,
  /** kernels before ~5.0 */
  legacyMemcg: /^Task in (.*) killed as a result of limit of (.*)$/,
  /** a cheap prefilter (and journalctl --grep) for the lines above */
  any: 'invoked oom-killer|^memory: usage|^oom-kill:|Killed process|^Task in .* killed as a result',
} as const;

/** One kernel log line, from /dev/kmsg or from the journal's kernel transport. */
export interface KernelLine {
  text: string;
  /** µs since boot */
  monotonicUs: number | null;
  /** RFC3339 wall-clock time, when known */
  time: string | null;
  bootId: string | null;
  seq: number | null;
  cursor: string | null;
}

export interface OomKill {
  time: string | null;
  bootId: string | null;
  monotonicUs: number | null;
  pid: number;
  process: string;
  uid: number | null;
  /** CONSTRAINT_MEMCG (a cgroup limit), CONSTRAINT_NONE (the node ran out), ... */
  constraint: string | null;
  /** true when the whole node ran out of memory (global_oom), not a cgroup limit */
  global: boolean;
  oomMemcg: string | null;
  taskMemcg: string | null;
  /** the task that ran into the limit and invoked the OOM killer */
  invokedBy: { process: string; gfpMask: string; gfpFlags: string | null; order: number; oomScoreAdj: number } | null;
  memcgUsageKb: number | null;
  memcgLimitKb: number | null;
  killed: {
    totalVmKb: number;
    anonRssKb: number;
    fileRssKb: number;
    shmemRssKb: number;
    pgtablesKb: number | null;
    oomScoreAdj: number | null;
  };
  evidence: {
    source: 'kmsg' | 'journal';
    /** kmsg sequence numbers of the report's first and last records */
    firstSeq: number | null;
    lastSeq: number | null;
    /** journal cursor of the "Killed process" record */
    cursor: string | null;
    /** the report's key lines, verbatim */
    lines: string[];
  };
}

interface Open {
  invokedBy: OomKill['invokedBy'];
  usage: [number, number] | null;
  summary: RegExpExecArray | null;
  legacy: RegExpExecArray | null;
  first: KernelLine;
  lines: string[];
  bootId: string | null;
}

export function parseOomReports(lines: Iterable<KernelLine>, source: 'kmsg' | 'journal'): OomKill[] {
  const out: OomKill[] = [];
  let cur: Open | null = null;
  const fresh = (l: KernelLine): Open => ({ invokedBy: null, usage: null, summary: null, legacy: null, first: l, lines: [], bootId: l.bootId });
  for (const l of lines) {
    // a report never spans boots
    if (cur && l.bootId !== cur.bootId) cur = null;
    const text = l.text;
    let m: RegExpExecArray | null;
    if ((m = OOM_PATTERNS.invoked.exec(text))) {
      cur = fresh(l);
      cur.invokedBy = { process: m[1]!, gfpMask: m[2]!, gfpFlags: m[3] ?? null, order: Number(m[4]), oomScoreAdj: Number(m[5]) };
      cur.lines.push(text);
    } else if ((m = OOM_PATTERNS.memcgUsage.exec(text))) {
      cur ??= fresh(l);
      cur.usage = [Number(m[1]), Number(m[2])];
      cur.lines.push(text);
    } else if ((m = OOM_PATTERNS.summary.exec(text))) {
      cur ??= fresh(l);
      cur.summary = m;
      cur.lines.push(text);
    } else if ((m = OOM_PATTERNS.legacyMemcg.exec(text))) {
      cur ??= fresh(l);
      cur.legacy = m;
      cur.lines.push(text);
    } else if ((m = OOM_PATTERNS.killed.exec(text))) {
      const r: Open = cur ?? fresh(l);
      const pid = Number(m[2]);
      const s = r.summary && Number(r.summary[9]) === pid ? r.summary : null;
      const memcg = m[1] === 'Memory cgroup out of memory';
      out.push({
        time: l.time,
        bootId: l.bootId,
        monotonicUs: l.monotonicUs,
        pid,
        process: m[3]!,
        uid: m[8] !== undefined ? Number(m[8]) : s ? Number(s[10]) : null,
        constraint: s?.[1] ?? (memcg ? 'CONSTRAINT_MEMCG' : null),
        global: s ? s[6] === 'global_oom' : !memcg,
        oomMemcg: s?.[5] ?? r.legacy?.[2] ?? null,
        taskMemcg: s?.[7] ?? r.legacy?.[1] ?? null,
        invokedBy: r.invokedBy,
        memcgUsageKb: r.usage?.[0] ?? null,
        memcgLimitKb: r.usage?.[1] ?? null,
        killed: {
          totalVmKb: Number(m[4]),
          anonRssKb: Number(m[5]),
          fileRssKb: Number(m[6]),
          shmemRssKb: Number(m[7]),
          pgtablesKb: m[9] !== undefined ? Number(m[9]) : null,
          oomScoreAdj: m[10] !== undefined ? Number(m[10]) : null,
        },
        evidence: {
          source,
          firstSeq: r.first.seq,
          lastSeq: l.seq,
          cursor: l.cursor,
          lines: [...r.lines, text],
        },
      });
      // memory.oom.group: more "Killed process" lines may follow in the same report
      if (cur) cur.summary = null;
    }
  }
  return out;
}
