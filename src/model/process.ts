/** Process and namespace records from /proc, shared by routes and triage. */

export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** the kernel's 15-character command name (may hold spaces and parentheses) */
  comm: string;
  /** argv as the process set it, NUL-split; empty for kernel threads and zombies. Never environ. */
  cmdline: string[];
  /** one-letter state from /proc/<pid>/stat: R S D Z T t X I ... */
  state: string;
  /** VmRSS from /proc/<pid>/status in bytes; null for kernel threads and zombies */
  rssBytes: number | null;
  threads: number;
  /** start time after boot, in clock ticks (/proc/<pid>/stat field 22) */
  startTicks: number;
}

export const NS_TYPES = ['cgroup', 'ipc', 'mnt', 'net', 'pid', 'pid_for_children', 'time', 'time_for_children', 'user', 'uts'] as const;
export type NsType = (typeof NS_TYPES)[number];

/** host: same inode as PID 1's; sandbox: same as the pod sandbox's process; else private. */
type NsSharing = 'host' | 'sandbox' | 'private';

export interface NamespaceEntry {
  type: NsType;
  inode: number;
  sharedWith: NsSharing;
  hostInode: number | null;
  sandboxInode: number | null;
}
