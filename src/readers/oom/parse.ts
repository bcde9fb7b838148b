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
 *   Tasks in <cg> are going to be killed due to memory.oom.group set     (memory.oom.group=1 only)
 *   Memory cgroup out of memory: Killed process <pid> (<comm>) …         (once per task of <cg>)
 *
 * With memory.oom.group set (kubelet sets it in every application container),
 * oom_kill_process (mm/oom_kill.c) kills the victim, then prints the "Tasks in"
 * line (mm/memcontrol.c mem_cgroup_print_oom_group) and calls __oom_kill_process
 * for every task of the group: the victim is killed (and printed) again while it
 * still has an mm, a task without one prints "OOM victim <pid> (<comm>) is
 * already exiting. Skip killing the task" (no kill). So within one report a pid
 * is one kill, and a kill of another pid after the "Tasks in" line is a kill of
 * a task of <cg>.
 *
 * Pure: lines in, kills out. The patterns are data: rules/oom-patterns.ts.
 */
import { OOM_PATTERNS } from '../../rules/oom-patterns.js';

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

/** Indexed as a regex's groups over the oom-kill line would be: 1 constraint, 2 nodemask, 3 cpuset, 4 mems_allowed, 5 oom_memcg, 6 'global_oom', 7 task_memcg, 8 task, 9 pid, 10 uid */
type OomSummary = Array<string | undefined>;

const PID_UID = /,pid=(\d+),uid=(\d+)$/;

/**
 * `oom-kill:constraint=…,nodemask=…,cpuset=…,mems_allowed=…,oom_memcg=<cg>|global_oom,task_memcg=<cg>,task=<comm>,pid=<n>,uid=<n>`
 * in linear time (indexOf, not backtracking): the task name is the tail after
 * the last `,task=` (a comm may hold commas), memcg values end at the first
 * following key.
 */
export function parseOomSummary(text: string): OomSummary | null {
  const pre = OOM_PATTERNS.summaryPrefix;
  if (!text.startsWith(pre) || text.includes('\n')) return null;
  let i = pre.length;
  while (i < text.length && /[A-Z_]/.test(text[i]!)) i++;
  if (i === pre.length) return null;
  const constraint = text.slice(pre.length, i);
  const end = PID_UID.exec(text);
  if (!end || end.index < i) return null;
  const mid = text.slice(i, end.index);
  const t = mid.lastIndexOf(',task=');
  if (t < 0) return null;
  const task = mid.slice(t + ',task='.length);
  const before = mid.slice(0, t);
  const om = before.indexOf(',oom_memcg=');
  const gl = before.indexOf(',global_oom,task_memcg=');
  const at = om >= 0 && (gl < 0 || om < gl) ? om : gl;
  if (at < 0) return null;
  let oomMemcg: string | undefined;
  let global: string | undefined;
  let taskMemcg: string;
  if (at === om) {
    const rest = before.slice(om + ',oom_memcg='.length);
    const tm = rest.indexOf(',task_memcg=');
    if (tm < 0) return null;
    oomMemcg = rest.slice(0, tm);
    taskMemcg = rest.slice(tm + ',task_memcg='.length);
  } else {
    global = 'global_oom';
    taskMemcg = before.slice(gl + ',global_oom,task_memcg='.length);
  }
  // the optional ,nodemask=… and ,cpuset=…,mems_allowed=… in front
  let sec = before.slice(0, at);
  let nodemask: string | undefined;
  let cpuset: string | undefined;
  let mems: string | undefined;
  if (sec.startsWith(',nodemask=')) {
    const c = sec.indexOf(',cpuset=');
    nodemask = sec.slice(',nodemask='.length, c < 0 ? sec.length : c);
    sec = c < 0 ? '' : sec.slice(c);
  }
  if (sec.startsWith(',cpuset=')) {
    const ma = sec.indexOf(',mems_allowed=');
    if (ma < 0) return null;
    cpuset = sec.slice(',cpuset='.length, ma);
    mems = sec.slice(ma + ',mems_allowed='.length);
    sec = '';
  }
  if (sec !== '') return null;
  return [text, constraint, nodemask, cpuset, mems, oomMemcg, global, taskMemcg, task, end[1], end[2]];
}

/** `Task in <cg> killed as a result of limit of <cg>` → [text, task cgroup, limit cgroup] */
/** `Tasks in <cg> are going to be killed due to memory.oom.group set` → <cg> */
function parseOomGroup(text: string): string | null {
  const prefix = 'Tasks in ';
  const suffix = ' are going to be killed due to memory.oom.group set';
  if (!text.startsWith(prefix) || !text.endsWith(suffix) || text.includes('\n')) return null;
  const cg = text.slice(prefix.length, text.length - suffix.length);
  return cg.length > 0 ? cg : null;
}

/** the pids of one report's kills remembered to merge a group kill's repeat of the victim; a report naming more is hostile */
const MAX_KILLS_PER_REPORT = 4096;

export function parseLegacyMemcg(text: string): string[] | null {
  const { prefix, separator } = OOM_PATTERNS.legacyMemcg;
  if (!text.startsWith(prefix) || text.includes('\n')) return null;
  const at = text.lastIndexOf(separator);
  if (at < prefix.length) return null;
  return [text, text.slice(prefix.length, at), text.slice(at + separator.length)];
}

interface Open {
  invokedBy: OomKill['invokedBy'];
  usage: [number, number] | null;
  summary: OomSummary | null;
  legacy: string[] | null;
  /** the memory.oom.group cgroup whose tasks this report kills */
  group: string | null;
  /** this report's kills by pid */
  kills: Map<number, OomKill>;
  first: KernelLine;
  lines: string[];
  bootId: string | null;
}

export function parseOomReports(lines: Iterable<KernelLine>, source: 'kmsg' | 'journal'): OomKill[] {
  const out: OomKill[] = [];
  let cur: Open | null = null;
  const fresh = (l: KernelLine): Open => ({ invokedBy: null, usage: null, summary: null, legacy: null, group: null, kills: new Map(), first: l, lines: [], bootId: l.bootId });
  for (const l of lines) {
    // a report never spans boots
    if (cur && l.bootId !== cur.bootId) cur = null;
    const text = l.text;
    if (text.length > OOM_PATTERNS.maxLineChars) continue;
    let m: RegExpExecArray | null;
    let sm: OomSummary | null;
    let lg: string[] | null;
    let grp: string | null;
    if ((m = OOM_PATTERNS.invoked.exec(text))) {
      cur = fresh(l);
      cur.invokedBy = { process: m[1]!, gfpMask: m[2]!, gfpFlags: m[3] ?? null, order: Number(m[4]), oomScoreAdj: Number(m[5]) };
      cur.lines.push(text);
    } else if ((m = OOM_PATTERNS.memcgUsage.exec(text))) {
      if (!cur || cur.kills.size > 0) cur = fresh(l);
      cur.usage = [Number(m[1]), Number(m[2])];
      cur.lines.push(text);
    } else if ((sm = parseOomSummary(text))) {
      // these lines come before a report's kill: after one they begin the next report (its "invoked" line was lost)
      if (!cur || cur.kills.size > 0) cur = fresh(l);
      cur.summary = sm;
      cur.lines.push(text);
    } else if ((lg = parseLegacyMemcg(text))) {
      if (!cur || cur.kills.size > 0) cur = fresh(l);
      cur.legacy = lg;
      cur.lines.push(text);
    } else if ((grp = parseOomGroup(text))) {
      // printed once per report, after the victim's kill
      if (cur && cur.kills.size > 0 && cur.group === null) {
        cur.group = grp;
        cur.lines.push(text);
        for (const k of cur.kills.values()) k.evidence.lines.push(text);
      }
    } else if ((m = OOM_PATTERNS.killed.exec(text))) {
      const r: Open = cur ?? fresh(l);
      const pid = Number(m[2]);
      const again = r.kills.get(pid);
      if (again) {
        // the group kill of this report's victim: the same kill
        if (again.evidence.lines.at(-1) !== text) again.evidence.lines.push(text);
        continue;
      }
      const s = r.summary && Number(r.summary[9]) === pid ? r.summary : null;
      const memcg = m[1] === 'Memory cgroup out of memory';
      // a kill after the "Tasks in" line is of a task of the group's cgroup
      const member = s === null && r.group !== null;
      const rs = s ?? (member ? r.summary : null);
      const kill: OomKill = {
        time: l.time,
        bootId: l.bootId,
        monotonicUs: l.monotonicUs,
        pid,
        process: m[3]!,
        uid: m[8] !== undefined ? Number(m[8]) : s ? Number(s[10]) : null,
        constraint: rs?.[1] ?? (memcg ? 'CONSTRAINT_MEMCG' : null),
        global: rs ? rs[6] === 'global_oom' : !memcg,
        oomMemcg: rs?.[5] ?? r.legacy?.[2] ?? null,
        taskMemcg: s?.[7] ?? (member ? r.group : null) ?? r.legacy?.[1] ?? null,
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
      };
      out.push(kill);
      if (cur && cur.kills.size < MAX_KILLS_PER_REPORT) cur.kills.set(pid, kill);
    }
  }
  return out;
}
