/**
 * Kernel log problems as a table (in the spirit of node-problem-detector's kernel
 * monitor config, written here from the kernel's own printk format strings): which
 * records mean trouble and what they name (a pid, a device) so a problem can be
 * attributed. How bad each is and what to do is the findings catalogue's (findings.ts,
 * by the same id); the scan that applies the table is view/kernel-problems.ts. The
 * texts each row matches, with the kernel source they come from (Linux 6.1 unless said):
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
 * Phrases are literals, found with indexOf (a record is at most the kernel's 1 KiB and
 * is cut at matchChars anyway): kernel text names tenants' commands and paths, so no
 * backtracking RegExp touches it.
 */

/**
 * A phrase a record contains: a literal; literals in this order with anything
 * between; or `{ prefix }`: the record starts with it (a kernel oops header, as
 * opposed to "traps: app[12] general protection fault ip:..." about a user process).
 */
export type KernelPhrase = string | readonly string[] | { readonly prefix: string };

/** What the kernel names in the record, for attribution. */
type KernelAttribution =
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
  /** the finding id (findings.ts holds its severity and text) */
  id: string;
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
    phrases: [['INFO: task ', ' blocked for more than ']],
    attribution: 'pid',
    lasting: false,
  },
  {
    id: 'kernel-soft-lockup',
    phrases: ['BUG: soft lockup - CPU#', 'Watchdog detected hard LOCKUP on cpu'],
    attribution: 'pid',
    lasting: false,
  },
  {
    id: 'kernel-rcu-stall',
    phrases: [' detected stalls on CPUs/tasks', ' self-detected stall on CPU'],
    attribution: 'none',
    lasting: false,
  },
  {
    id: 'kernel-oops',
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
    phrases: ['Remounting filesystem read-only', ['XFS (', 'Shutting down filesystem']],
    attribution: 'device',
    lasting: true,
  },
  {
    id: 'kernel-fs-error',
    phrases: ['EXT4-fs error (device ', ['XFS (', '): Corruption detected'], ['XFS (', '): Metadata corruption detected'], ['XFS (', '): metadata I/O error'], 'Aborting journal on device '],
    attribution: 'device',
    lasting: false,
  },
  {
    id: 'kernel-io-error',
    phrases: ['I/O error, dev ', 'critical medium error, dev ', 'critical target error, dev ', 'Buffer I/O error on dev '],
    attribution: 'device',
    lasting: false,
  },
  {
    id: 'kernel-conntrack-full',
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
