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
import { KUBELET_HOSTS, NODE_OS_LIMITS } from '../../rules/node-os.js';
import { kubeletArgv } from './kubelet-config.js';
import { parseFlags } from './kubelet-flags.js';

export type KubeletLogFile =
  | { path: string; within: string; from: string }
  | { refused: string; from: string };

/** the pid last found, by host root and the names looked for */
const lastPid = new Map<string, number>();
/** when a full listing last found none, by the same key: not listed again for NONE_TTL_MS */
const noneSince = new Map<string, number>();
const NONE_TTL_MS = 5000;

async function commOf(fs: HostFs, proc: Awaited<ReturnType<HostFs['dir']>>, pid: number): Promise<string | null> {
  const comm = await fs.readIn(fs.child(proc, String(pid)), 'comm', 64).catch(() => null);
  return comm === null ? null : comm.trim();
}

/** The first process named one of `comms` (the lowest pid listed), or null. */
async function findProcess(fs: HostFs, comms: readonly string[]): Promise<{ pid: number; comm: string } | null> {
  const key = `${fs.root}\0${comms.join(',')}`;
  const proc = await fs.dir('/proc');
  const last = lastPid.get(key);
  if (last !== undefined) {
    const comm = await commOf(fs, proc, last);
    if (comm !== null && comms.includes(comm)) return { pid: last, comm };
  }
  lastPid.delete(key);
  if (Date.now() - (noneSince.get(key) ?? -Infinity) < NONE_TTL_MS) return null;
  const entries = (await fs.readdir(proc).catch(() => null)) ?? [];
  let n = 0;
  for (const e of entries) {
    if (++n > NODE_OS_LIMITS.maxProcEntries) break;
    if (!/^\d{1,10}$/.test(e.name)) continue;
    const comm = await commOf(fs, proc, Number(e.name));
    if (comm === null || !comms.includes(comm)) continue;
    if (lastPid.size > 64) lastPid.clear();
    lastPid.set(key, Number(e.name));
    return { pid: Number(e.name), comm };
  }
  if (noneSince.size > 64) noneSince.clear();
  noneSince.set(key, Date.now());
  return null;
}

/** The kubelet's pid, or null when no process named kubelet is seen. */
async function findKubeletPid(fs: HostFs): Promise<number | null> {
  return (await findProcess(fs, ['kubelet']))?.pid ?? null;
}

/**
 * Where kubelet runs inside another program (k3s: no kubelet process, kubelet's records
 * are the k3s unit's): the systemd unit of that process, from its /proc/<pid>/cgroup.
 * null when a kubelet process runs, or no such program is seen.
 */
export async function kubeletHostUnit(fs: HostFs): Promise<{ unit: string; from: string } | null> {
  if ((await findKubeletPid(fs)) !== null) return null;
  const p = await findProcess(fs, KUBELET_HOSTS);
  if (p === null) return null;
  const cgroup = await fs.readIn(fs.child(await fs.dir('/proc'), String(p.pid)), 'cgroup', 16 * 1024).catch(() => null);
  for (const line of (cgroup ?? '').split('\n').slice(0, 64)) {
    const unit = /\/([A-Za-z0-9@._-]{1,200}\.service)$/.exec(line.trim())?.[1];
    if (unit) return { unit, from: `${p.comm} (pid ${p.pid}) runs kubelet; its unit from /proc/${p.pid}/cgroup` };
  }
  return null;
}

/** What kubelet's flags say about its log file: a path to read, a refusal with its reason, or null (it logs to stderr). */
function logFileOf(argv: readonly string[], from: string): KubeletLogFile | null {
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
