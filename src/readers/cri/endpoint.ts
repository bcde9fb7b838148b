/**
 * The CRI endpoint when --cri-endpoint is not given, asked of the node: kubelet's own
 * --container-runtime-endpoint (its command line, else its config's
 * containerRuntimeEndpoint, drop-ins merged), then a containerd process's --address,
 * then the first socket of rules/node-os.ts CRI_SOCKETS that exists under the host root.
 * Talos' system containerd socket is never chosen, whoever names it.
 *
 * Runs once, synchronously, while the configuration is loaded (before anything is
 * served). Bounded: /proc entries, argv, file sizes, drop-ins. A kubelet or containerd
 * with a thread in D state is not asked (its cmdline read can wait on its memory map
 * for good): the fallback sockets answer instead. Every file is read inside the host
 * root: a path whose real location is outside it is refused.
 */
import { closeSync, constants, type Dirent, existsSync, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { CRI_SOCKETS, NODE_OS_LIMITS, NOT_CRI_SOCKETS } from '../../rules/node-os.js';
import { byBytes, mergeConfigs, parseFlags, type ConfigFile } from '../node/kubelet-flags.js';

interface EndpointChoice {
  /** unix://<host root>/<socket>, null when none was found */
  endpoint: string | null;
  /** how it was found, e.g. "kubelet --container-runtime-endpoint (/proc/812/cmdline)" */
  source: string;
  /** the host path of the socket (without the host root) */
  hostPath: string | null;
}

const chosen = new Map<string, EndpointChoice>();

/** What discovery chose for a host root this process (null when it never ran: the endpoint was given). */
export function discoveredEndpoint(hostRoot: string): EndpointChoice | null {
  return chosen.get(path.resolve(hostRoot)) ?? null;
}

const realRoots = new Map<string, string>();
const realRoot = (hostRoot: string): string => {
  let r = realRoots.get(hostRoot);
  if (r === undefined) realRoots.set(hostRoot, (r = realpathSync(hostRoot)));
  return r;
};

/** Read a host file synchronously, inside the root, at most `max` bytes; null when absent, refused or too large. */
function readHostFileSync(hostRoot: string, hostPath: string, max: number): string | null {
  let real: string;
  try {
    const root = realRoot(hostRoot);
    real = realpathSync(path.join(root, hostPath));
    if (real !== root && !real.startsWith(root === '/' ? '/' : `${root}/`)) return null;
    // never open a device or a FIFO a flag names (opening /dev/watchdog arms it): regular files only
    if (!statSync(real).isFile()) return null;
  } catch {
    return null;
  }
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || (st.size > max && st.size > 0)) return null;
    const buf = Buffer.alloc(max + 1);
    let total = 0;
    while (total < buf.length) {
      const n = readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
    }
    return total > max ? null : buf.toString('utf8', 0, total);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A file directly in /proc/<pid> (or its task dir) under the root: the pid directory must be a real directory, the file no link; bounded. */
function readProcFileSync(hostRoot: string, rel: string, max: number): string | null {
  const [pid] = rel.split('/');
  const dir = path.join(realRoot(hostRoot), 'proc', pid!);
  try {
    if (!lstatSync(dir).isDirectory()) return null;
  } catch {
    return null;
  }
  let fd: number;
  try {
    fd = openSync(path.join(realRoot(hostRoot), 'proc', rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, null);
    return buf.toString('utf8', 0, n);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** pids of processes with this comm, at most `limit`; a /proc/<pid> that is a link is skipped. */
function pidsNamed(hostRoot: string, comms: readonly string[], limit: number): Array<{ pid: number; comm: string }> {
  const out: Array<{ pid: number; comm: string }> = [];
  let names: string[];
  try {
    names = readdirSync(path.join(hostRoot, 'proc'));
  } catch {
    return out;
  }
  for (const name of names.slice(0, NODE_OS_LIMITS.maxProcEntries)) {
    if (!/^\d{1,10}$/.test(name)) continue;
    const comm = readProcFileSync(hostRoot, `${name}/comm`, 64)?.trim();
    if (comm === undefined || !comms.includes(comm)) continue;
    out.push({ pid: Number(name), comm });
    if (out.length >= limit) break;
  }
  return out;
}

/** Whether any thread of the process is in D state (its cmdline read could hang): then it is not asked. */
function anyThreadStuck(hostRoot: string, pid: number): boolean {
  let tasks: string[];
  try {
    tasks = readdirSync(path.join(hostRoot, 'proc', String(pid), 'task')).slice(0, 1024);
  } catch {
    tasks = [String(pid)];
  }
  for (const t of tasks) {
    const stat = readProcFileSync(hostRoot, `${pid}/task/${t}/stat`, 4096) ?? (t === String(pid) ? readProcFileSync(hostRoot, `${pid}/stat`, 4096) : null);
    if (stat && / D /.test(stat.slice(stat.lastIndexOf(')') + 1, stat.lastIndexOf(')') + 4))) return true;
  }
  return false;
}

function argvOf(hostRoot: string, pid: number): string[] | null {
  if (anyThreadStuck(hostRoot, pid)) return null;
  const text = readProcFileSync(hostRoot, `${pid}/cmdline`, 64 * 1024);
  if (!text) return null;
  return text.split('\0').filter((a, i, all) => a !== '' || i < all.length - 1).slice(0, NODE_OS_LIMITS.maxArgs);
}

/** A unix:// endpoint (or a bare path) as a host path, null when it is not a unix socket path. */
export function socketHostPath(endpoint: string): string | null {
  const p = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!p.startsWith('/') || p.length > 4096 || p.includes('\0')) return null;
  return path.posix.normalize(p);
}

/** kubelet-flags.ts dropInNames, synchronously: *.conf files in the walk's order, subdirectories included, links not descended; bounded. */
function dropInNamesSync(hostRoot: string, dirPath: string): string[] {
  const out: string[] = [];
  let seen = 0;
  let dirs = 0;
  const visit = (rel: string, depth: number): boolean => {
    let entries: Dirent[];
    try {
      const root = realRoot(hostRoot);
      const real = realpathSync(path.join(root, dirPath, rel));
      if (!real.startsWith(`${root}/`)) return true;
      entries = readdirSync(real, { withFileTypes: true });
    } catch {
      return true;
    }
    for (const e of entries.sort((a, b) => byBytes(a.name, b.name))) {
      if (++seen > NODE_OS_LIMITS.maxDirEntries) return false;
      const name = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (depth < NODE_OS_LIMITS.maxDropInDepth && (++dirs > NODE_OS_LIMITS.maxDropInDirs || !visit(name, depth + 1))) return false;
      } else if (e.name.endsWith('.conf')) out.push(name);
    }
    return true;
  };
  visit('', 0);
  return out.slice(0, NODE_OS_LIMITS.maxDropIns);
}

/** kubelet's config (and --config-dir drop-ins) merged, for containerRuntimeEndpoint; synchronous and bounded. */
function kubeletConfigEndpoint(hostRoot: string, configPath: string | null, configDir: string | null): { value: string; file: string } | null {
  const parts: Array<{ file: ConfigFile; text: string }> = [];
  if (configPath?.startsWith('/')) {
    const text = readHostFileSync(hostRoot, configPath, NODE_OS_LIMITS.maxConfigBytes);
    if (text !== null) parts.push({ file: { path: configPath, role: 'config', from: '--config' }, text });
  }
  if (configDir?.startsWith('/')) {
    const dir = configDir.replace(/\/+$/, '');
    for (const n of dropInNamesSync(hostRoot, dir)) {
      const p = `${dir}/${n}`;
      const text = readHostFileSync(hostRoot, p, NODE_OS_LIMITS.maxConfigBytes);
      if (text !== null) parts.push({ file: { path: p, role: 'drop-in', from: '--config-dir' }, text });
    }
  }
  const merged = mergeConfigs(parts);
  const v = merged.doc.containerRuntimeEndpoint;
  return typeof v === 'string' ? { value: v, file: merged.sourceOf.get('containerRuntimeEndpoint') ?? configPath ?? '' } : null;
}

/** Discover the CRI endpoint under a host root (see the file's comment); remembers the choice for /v1/node. */
export function discoverCriEndpointSync(hostRoot: string): EndpointChoice {
  const candidates: Array<{ endpoint: string; source: string }> = [];
  for (const { pid } of pidsNamed(hostRoot, ['kubelet'], 2)) {
    const argv = argvOf(hostRoot, pid);
    if (!argv) continue;
    const flags = parseFlags(argv);
    const flag = flags.get('container-runtime-endpoint')?.value;
    if (flag) candidates.push({ endpoint: flag, source: `kubelet --container-runtime-endpoint (/proc/${pid}/cmdline)` });
    const fromConfig = kubeletConfigEndpoint(hostRoot, flags.get('config')?.value ?? null, flags.get('config-dir')?.value ?? null);
    if (fromConfig) candidates.push({ endpoint: fromConfig.value, source: `kubelet config containerRuntimeEndpoint (${fromConfig.file})` });
  }
  for (const { pid } of pidsNamed(hostRoot, ['containerd'], 4)) {
    const argv = argvOf(hostRoot, pid);
    const address = argv ? parseFlags(argv).get('address')?.value : undefined;
    if (address) candidates.push({ endpoint: address, source: `containerd --address (/proc/${pid}/cmdline)` });
  }
  for (const s of CRI_SOCKETS) candidates.push({ endpoint: s.path, source: `first known socket that exists (${s.runtime})` });
  let choice: EndpointChoice = { endpoint: null, source: `none found (looked for ${CRI_SOCKETS.map((s) => s.path).join(', ')} under ${hostRoot})`, hostPath: null };
  for (const c of candidates) {
    const hostPath = socketHostPath(c.endpoint);
    if (hostPath === null || NOT_CRI_SOCKETS.includes(hostPath)) continue;
    const real = path.join(hostRoot, hostPath);
    try {
      if (!existsSync(real) || statSync(real).isDirectory()) continue;
      const root = realpathSync(hostRoot);
      if (!realpathSync(real).startsWith(root === '/' ? '/' : `${root}/`)) continue; // a link out of the host root
    } catch {
      continue;
    }
    choice = { endpoint: `unix://${real}`, source: c.source, hostPath };
    break;
  }
  chosen.set(path.resolve(hostRoot), choice);
  return choice;
}
