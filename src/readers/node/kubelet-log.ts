/**
 * The file kubelet logs to when its command line names one (`--log-file`, with
 * `--logtostderr=false`: rke2 writes /var/lib/rancher/rke2/agent/logs/kubelet.log), asked
 * of the kubelet process under the host's /proc. The kubelet's pid is remembered and
 * checked (its comm) before it is used again, so a steady node costs two small reads;
 * otherwise /proc is listed once, bounded in entries (and not again for 5 s when no
 * kubelet was seen). The path is a host path: it is read
 * inside the host root and inside the directory the flag names (file-log.ts), and a value
 * with `..` or not absolute is refused with its reason.
 */
import path from 'node:path';
import type { HostFs } from '../hostfs/hostfs.js';
import { NODE_OS_LIMITS } from '../../rules/node-os.js';
import { kubeletArgv } from './kubelet-config.js';
import { parseFlags } from './kubelet-flags.js';

export type KubeletLogFile =
  | { path: string; within: string; from: string }
  | { refused: string; from: string };

/** the kubelet pid last found, by host root */
const lastPid = new Map<string, number>();
/** when a full listing last found no kubelet, by host root: not listed again for NONE_TTL_MS */
const noneSince = new Map<string, number>();
const NONE_TTL_MS = 5000;

async function isKubelet(fs: HostFs, proc: Awaited<ReturnType<HostFs['dir']>>, pid: number): Promise<boolean> {
  const comm = await fs.readIn(fs.child(proc, String(pid)), 'comm', 64).catch(() => null);
  return comm?.trim() === 'kubelet';
}

/** The kubelet's pid, or null when no process named kubelet is seen. */
export async function findKubeletPid(fs: HostFs): Promise<number | null> {
  const proc = await fs.dir('/proc');
  const last = lastPid.get(fs.root);
  if (last !== undefined && (await isKubelet(fs, proc, last))) return last;
  lastPid.delete(fs.root);
  if (Date.now() - (noneSince.get(fs.root) ?? -Infinity) < NONE_TTL_MS) return null;
  const entries = (await fs.readdir(proc).catch(() => null)) ?? [];
  let n = 0;
  for (const e of entries) {
    if (++n > NODE_OS_LIMITS.maxProcEntries) break;
    if (!/^\d{1,10}$/.test(e.name)) continue;
    if (!(await isKubelet(fs, proc, Number(e.name)))) continue;
    if (lastPid.size > 16) lastPid.clear();
    lastPid.set(fs.root, Number(e.name));
    return Number(e.name);
  }
  if (noneSince.size > 16) noneSince.clear();
  noneSince.set(fs.root, Date.now());
  return null;
}

/** What kubelet's flags say about its log file: a path to read, a refusal with its reason, or null (it logs to stderr). */
export function logFileOf(argv: readonly string[], from: string): KubeletLogFile | null {
  const flags = parseFlags(argv);
  const file = flags.get('log-file')?.value;
  if (!file) return null;
  // klog writes the file only when logtostderr is off (its default is on)
  if (flags.get('logtostderr')?.value !== 'false') return null;
  const where = `kubelet --log-file (${from})`;
  if (!file.startsWith('/')) return { refused: `--log-file ${JSON.stringify(file.slice(0, 200))} is not an absolute path`, from: where };
  if (file.split('/').includes('..')) return { refused: `--log-file ${JSON.stringify(file.slice(0, 200))} has a '..' component: not read`, from: where };
  const p = path.posix.normalize(file);
  return { path: p, within: path.posix.dirname(p), from: where };
}

/** kubelet's --log-file on this node, or null when kubelet is not seen or logs to stderr. */
export async function kubeletLogFile(fs: HostFs): Promise<KubeletLogFile | null> {
  const pid = await findKubeletPid(fs).catch(() => null);
  if (pid === null) return null;
  const argv = await kubeletArgv(fs, pid).catch(() => null);
  return argv ? logFileOf(argv, `/proc/${pid}/cmdline`) : null;
}
