/**
 * Kernel log problems as a table of rules (in the spirit of node-problem-detector's
 * kernel monitor config, written here from the kernel's own printk format strings):
 * which records mean trouble, how bad, what to do, and what they name (a pid, a
 * device) so a finding can be attributed. The texts each row matches, with the
 * kernel source they come from (Linux 6.1 unless said):
 *
 *   hung task     kernel/hung_task.c  pr_err("INFO: task %s:%d blocked for more than %ld seconds.\n", comm, pid, secs)
 *   soft lockup   kernel/watchdog.c   pr_emerg("BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]\n") with pr_fmt "watchdog: "
 *                                     ("NMI watchdog: " before 4.13); hard lockup: "Watchdog detected hard LOCKUP on cpu %d"
 *   RCU stall     kernel/rcu/tree_stall.h  pr_err("INFO: %s detected stalls on CPUs/tasks:\n", rcu_state.name),
 *                                     pr_err("INFO: %s self-detected stall on CPU\n"); pr_fmt "rcu: " (5.0+), name rcu_sched / rcu_preempt
 *   oops          arch/x86/mm/fault.c "BUG: kernel NULL pointer dereference, address: %px", "BUG: unable to handle page fault for address: %px";
 *                 lib/bug.c "kernel BUG at %s:%u!"; arch/x86/kernel/dumpstack.c "%s: %04lx [#%d]%s%s%s%s%s" with "Oops",
 *                 "general protection fault, ...", "divide error", "invalid opcode" (6.10+: "Oops: general protection fault, ...");
 *                 then lib/dump_stack.c "CPU: %d PID: %d Comm: %.20s %s%s %s %.*s" (6.10+: "CPU: %d UID: %u PID: %d Comm: ...")
 *                 where %s%s is "Not tainted" or "Tainted: " and the taint letters (kernel/panic.c print_tainted)
 *   ext4          fs/ext4/super.c "EXT4-fs error (device %s): %s:%d: comm %s: %pV", ext4_msg(sb, KERN_CRIT, "Remounting filesystem read-only")
 *                 printed as "EXT4-fs (%s): %pV"; fs/jbd2 "Aborting journal on device %s."
 *   xfs           fs/xfs/xfs_message.c "XFS (%s): %pV": "Corruption detected. Unmount and run xfs_repair",
 *                 "metadata I/O error in \"%pS\" at daddr 0x%llx len %d error %d", "Metadata corruption detected at %pS, %s block 0x%llx",
 *                 "%s (0x%x) detected at %pS (%s:%d).  Shutting down filesystem."
 *   block         block/blk-core.c (blk_print_req_error, 5.10+) "%s error, dev %s, sector %llu op 0x%x:(%s) flags 0x%x phys_seg %u prio class %u"
 *                 with "I/O error", "critical medium error", ...; before 5.10 prefixed "blk_update_request: ";
 *                 fs/buffer.c "Buffer I/O error on dev %pg, logical block %llu%s"
 *   conntrack     net/netfilter/nf_conntrack_core.c net_warn_ratelimited("nf_conntrack: table full, dropping packet\n") under
 *                 pr_fmt KBUILD_MODNAME ": ", so printed "nf_conntrack: nf_conntrack: table full, dropping packet"; newer
 *                 kernels say "table full in netns %u, dropping packet" for a netns other than the host's
 *
 * OOM kills are the OOM source's (view/oom.ts), not rows here.
 *
 * Matching is linear: literal phrases found with indexOf (a record is at most the
 * kernel's 1 KiB and is cut at MATCH_CHARS anyway), values taken by hand-written
 * scanners (named.ts). Kernel text names tenants' commands and paths, so no backtracking
 * RegExp touches it. Only facility-0 records are the kernel's: a record a process
 * writes to /dev/kmsg gets LOG_USER (or its own facility) from the kernel, so a
 * tenant cannot forge a hung task of another pod. Pure: no I/O.
 */
import { setImmediate as yieldNow } from 'node:timers/promises';
import type { Severity } from '../model/triage.js';
import type { KmsgRecord } from '../readers/kmsg/parse.js';
import { containsInOrder } from '../lib/phrases.js';
import { named, parseCpuLine, type Named } from '../readers/kmsg/named.js';

/**
 * A phrase a record contains: a literal; literals in this order with anything
 * between; or `{ prefix }`: the record starts with it (a kernel oops header, as
 * opposed to "traps: app[12] general protection fault ip:..." about a user process).
 */
export type KernelPhrase = string | readonly string[] | { readonly prefix: string };

/** What the kernel names in the record, for attribution. */
export type KernelAttribution =
  /** the record names the task: "<comm>:<pid>" (hung task, soft lockup) */
  | 'pid'
  /** the task is on a following "CPU: n PID: p Comm: c" record (an oops) */
  | 'context-pid'
  /** a block device or filesystem: "(device sda1)", "XFS (dm-0)", "dev vda," */
  | 'device'
  /** a network namespace, where the kernel says one */
  | 'netns'
  | 'none';

export interface KernelProblemKind {
  /** the triage finding id */
  id: string;
  severity: Severity;
  title: string;
  /** what it means (docs/triage.md's table) */
  means: string;
  /** the next step */
  hint: string;
  phrases: readonly KernelPhrase[];
  attribution: KernelAttribution;
  /**
   * true: the state stays after the record (a read-only remount, an oops leaves the
   * kernel tainted), so it is reported whatever its age this boot; false: only records
   * of the last thresholds' kernelWindowMinutes count.
   */
  lasting: boolean;
}

export const KERNEL_PROBLEMS: readonly KernelProblemKind[] = [
  {
    id: 'kernel-hung-task',
    severity: 'warning',
    title: 'A task was blocked in the kernel (hung task)',
    means:
      'The hung-task detector saw a task in uninterruptible sleep (D) for longer than `kernel.hung_task_timeout_secs` (`INFO: task <comm>:<pid> blocked for more than N seconds.`): it waits on I/O that does not complete (a dead NFS server, a stuck block device, a frozen filesystem) or on a lock held by such a task.',
    hint: 'Find what it waits on: `cat /proc/<pid>/stack` and `/proc/<pid>/wchan`, `GET /v1/kernel?pattern=blocked for more than` for the stack the kernel printed, and look for I/O or NFS errors before it; a task in D cannot be killed until the I/O returns.',
    phrases: [['INFO: task ', ' blocked for more than ']],
    attribution: 'pid',
    lasting: false,
  },
  {
    id: 'kernel-soft-lockup',
    severity: 'critical',
    title: 'A CPU was stuck in the kernel (soft or hard lockup)',
    means: 'The watchdog saw a CPU run kernel code without scheduling for longer than the threshold (`BUG: soft lockup - CPU#n stuck for Ns! [<comm>:<pid>]`), or not even taking interrupts (hard LOCKUP): the kernel misbehaves; everything on that CPU stalls.',
    hint: 'Read the stack the kernel printed (`GET /v1/kernel?pattern=soft lockup`); a lockup under heavy load on a VM can be the hypervisor stealing CPU (check steal time). Drain the node if lockups repeat; report the stack to the kernel vendor.',
    phrases: ['BUG: soft lockup - CPU#', 'Watchdog detected hard LOCKUP on cpu'],
    attribution: 'pid',
    lasting: false,
  },
  {
    id: 'kernel-rcu-stall',
    severity: 'critical',
    title: 'RCU stalls: CPUs did not pass a quiescent state',
    means: 'The RCU subsystem waited too long for CPUs or tasks (`rcu: INFO: rcu_sched detected stalls on CPUs/tasks`, `rcu_preempt self-detected stall on CPU`): a CPU loops in the kernel with preemption or interrupts off; memory is not freed meanwhile and the node stalls.',
    hint: "Read the records after it for the stalled CPUs' stacks (`GET /v1/kernel?pattern=stall`); on a VM, check for CPU steal. Drain the node if stalls repeat.",
    phrases: [' detected stalls on CPUs/tasks', ' self-detected stall on CPU'],
    attribution: 'none',
    lasting: false,
  },
  {
    id: 'kernel-oops',
    severity: 'critical',
    title: 'The kernel hit a bug (BUG, oops, general protection fault)',
    means: 'The kernel faulted in its own code (`BUG: unable to handle page fault`, `BUG: kernel NULL pointer dereference`, `kernel BUG at`, `Oops:`, `general protection fault`): the task it ran for was killed and the kernel is tainted (D); locks it held may never be released, so more tasks may hang.',
    hint: 'Read the whole report (`GET /v1/kernel?sinceSeq=<seq>&tailLines=80`: Call Trace, modules, taint). The node is no longer trustworthy: cordon and drain it, reboot, and report the trace to the kernel vendor.',
    phrases: [
      { prefix: 'BUG: unable to handle ' },
      { prefix: 'BUG: kernel NULL pointer dereference' },
      { prefix: 'kernel BUG at ' },
      { prefix: 'Oops: ' },
      { prefix: 'general protection fault' },
      { prefix: 'divide error: ' },
      { prefix: 'invalid opcode: ' },
    ],
    attribution: 'context-pid',
    lasting: true,
  },
  {
    id: 'kernel-fs-read-only',
    severity: 'critical',
    title: 'A filesystem was remounted read-only or shut down after errors',
    means: 'The kernel stopped writes to a filesystem after it found errors (`EXT4-fs (<dev>): Remounting filesystem read-only`, `XFS (<dev>): ... Shutting down filesystem`): every write there fails with EROFS or EIO until it is repaired and remounted.',
    hint: 'Find the mount (`grep <dev> /proc/self/mountinfo`); pods writing to it fail. Drain the node, repair the filesystem (`fsck` / `xfs_repair` unmounted) and check the disk; the errors before this record say why.',
    phrases: ['Remounting filesystem read-only', ['XFS (', 'Shutting down filesystem']],
    attribution: 'device',
    lasting: true,
  },
  {
    id: 'kernel-fs-error',
    severity: 'warning',
    title: 'A filesystem reports errors',
    means: 'ext4 or XFS found corrupt metadata or could not read or write it (`EXT4-fs error (device <dev>)`, `XFS (<dev>): Corruption detected`, `XFS (<dev>): metadata I/O error`, `Aborting journal on device`): files may be lost and the filesystem may go read-only next.',
    hint: 'Check the device beneath (block I/O errors, `smartctl`, the cloud disk); plan a repair (`fsck -n` / `xfs_repair -n` report without changing). With `errors=remount-ro` the next error stops writes.',
    phrases: ['EXT4-fs error (device ', ['XFS (', '): Corruption detected'], ['XFS (', '): Metadata corruption detected'], ['XFS (', '): metadata I/O error'], 'Aborting journal on device '],
    attribution: 'device',
    lasting: false,
  },
  {
    id: 'kernel-io-error',
    severity: 'warning',
    title: 'A block device returns I/O errors',
    means: 'Reads or writes to a disk failed (`I/O error, dev <dev>, sector <n>`, `blk_update_request: I/O error`, `Buffer I/O error on dev <dev>`): the disk, its path or the cloud volume is failing; filesystems on it will report errors next.',
    hint: 'Check the device (`smartctl -a`, the cloud volume state, multipath) and which filesystem lives on it (`lsblk`); tasks waiting on it show up as hung tasks.',
    phrases: ['I/O error, dev ', 'critical medium error, dev ', 'critical target error, dev ', 'Buffer I/O error on dev '],
    attribution: 'device',
    lasting: false,
  },
  {
    id: 'kernel-conntrack-full',
    severity: 'critical',
    title: 'The conntrack table is full: new connections are dropped',
    means: 'netfilter had no room for a new connection and dropped its packet (`nf_conntrack: nf_conntrack: table full, dropping packet`, or `table full in netns <n>`): new connections of every pod (and Service traffic through kube-proxy NAT) fail or time out at random, silently.',
    hint: 'Compare `/proc/sys/net/netfilter/nf_conntrack_count` with `nf_conntrack_max`; raise the limit (kube-proxy `--conntrack-max-per-core`, sysctl `net.netfilter.nf_conntrack_max`) or find the pod opening connections without bound (`conntrack -L` by source).',
    phrases: ['nf_conntrack: table full, dropping packet', ['nf_conntrack: table full in netns ', ', dropping packet']],
    attribution: 'netns',
    lasting: false,
  },
];

export const KERNEL_PROBLEM_LIMITS = {
  /** characters of a record searched (the kernel's own record limit is 1 KiB) */
  matchChars: 2048,
  /** records scanned between yields to the event loop */
  chunk: 4096,
  /** records a report may be followed for its "CPU: n PID: p Comm: c" line */
  contextRecords: 12,
  /** problems kept per kind (the newest); a conntrack flood is counted, not kept */
  keepPerKind: 200,
  /** characters of a record kept as evidence */
  excerptChars: 600,
} as const;

/** One matched record, with what it names. */
export interface KernelProblem extends Named {
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

export interface KernelScan {
  problems: KernelProblem[];
  /** records matched per kind, including those not kept */
  counts: Record<string, number>;
  /** records scanned (facility 0) */
  scanned: number;
}

const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);

export function phraseMatches(ph: KernelPhrase, text: string): boolean {
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
      await yieldNow();
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
