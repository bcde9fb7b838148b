/**
 * kubelet's eviction thresholds in force: evictionHard / evictionSoft from its config
 * file (KubeletConfiguration, kubelet.config.k8s.io/v1beta1), --eviction-hard /
 * --eviction-soft flags on its command line over them (flags win, as in kubelet), and
 * kubelet's Linux defaults when the file sets no evictionHard at all. A partial
 * evictionHard does not inherit the defaults for the signals it leaves out (they are
 * unset then) unless mergeDefaultEvictionSettings is true.
 *
 * The files are found from kubelet's --config and --config-dir in /proc/<kubelet pid>/cmdline
 * (read through the /proc limiter: cmdline reads can block), else a distribution's known
 * paths (rules/node-os.ts), and merged as kubelet merges drop-ins (kubelet-flags.ts). They
 * are tenant-unreachable but still read bounded (size, count, YAML aliases) and through HostFs.
 */
import type { DiskUse, EvictionCheck, EvictionConfig, EvictionSignal, EvictionThreshold } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { procReads, readBlocking, PROC_LIMITS } from '../proc/limiter.js';
import { parseCmdline } from '../proc/parse.js';
import { readKubeletSetup, type Flags, type KubeletSetup } from './kubelet-flags.js';

const DEFAULT_KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';

/** kubelet's default hard thresholds on Linux (pkg/kubelet/eviction/defaults_linux.go's values). */
const DEFAULT_EVICTION_HARD: Readonly<Partial<Record<EvictionSignal, string>>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

const SIGNALS = new Set<string>(['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']);
const SUFFIX: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** "10%" → ratio; "100Mi" → quantity; null when it is neither (a Kubernetes quantity, no exponent forms). */
export function parseThresholdValue(v: string): { ratio: number | null; quantity: number | null } | null {
  const t = v.trim();
  const pct = /^(\d{1,3}(?:\.\d{1,6})?)%$/.exec(t);
  if (pct) {
    const r = Number(pct[1]) / 100;
    return r >= 0 && r <= 1 ? { ratio: r, quantity: null } : null;
  }
  const q = /^(\d{1,18}(?:\.\d{1,9})?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(t);
  if (!q) return null;
  return { ratio: null, quantity: Number(q[1]) * SUFFIX[q[2] ?? '']! };
}

/** "memory.available<100Mi,nodefs.available<10%" (the flag form) → map */
function parseEvictionFlag(v: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of v.split(',').slice(0, 16)) {
    const i = part.indexOf('<');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

interface KubeletConfigRead {
  eviction: EvictionConfig;
  /** tlsCertFile from the config (the serving certificate), null when unset */
  tlsCertFile: string | null;
  /** kubelet's flags and the config files read (readKubeletConfig only) */
  setup?: KubeletSetup;
}

/** The kubelet's argv, read through the /proc limiter; null when it cannot be had. */
export async function kubeletArgv(fs: HostFs, pid: number): Promise<string[] | null> {
  const dir = await fs.dir(`/proc/${pid}`);
  const r = await procReads.run(() => readBlocking(`${dir.realPath}/cmdline`, PROC_LIMITS.cmdlineMaxBytes * 8));
  return r.ok && r.value ? parseCmdline(r.value.text) : null;
}

function thresholdsFrom(map: Map<string, string>, kind: 'hard' | 'soft', from: 'config' | 'default', bad: string[], source: (signal: string) => string): EvictionThreshold[] {
  const out: EvictionThreshold[] = [];
  for (const [signal, value] of map) {
    if (!SIGNALS.has(signal)) {
      bad.push(`eviction${kind === 'hard' ? 'Hard' : 'Soft'}: unknown signal ${JSON.stringify(signal.slice(0, 64))} skipped`);
      continue;
    }
    const v = parseThresholdValue(value);
    if (!v) {
      bad.push(`eviction${kind === 'hard' ? 'Hard' : 'Soft'}[${signal}]: ${JSON.stringify(value.slice(0, 64))} is not a quantity or percentage, skipped`);
      continue;
    }
    out.push({ signal: signal as EvictionSignal, kind, value, ...v, from, source: source(signal) });
  }
  return out;
}

const asMap = (v: unknown): Map<string, string> => {
  const out = new Map<string, string>();
  if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v).slice(0, 32)) if (typeof x === 'string') out.set(k, x);
  return out;
};

/** The thresholds in force from a merged config (base and drop-ins) and kubelet's flags; each says which file or flag set it. */
function evictionFromDoc(doc: Record<string, unknown>, flags: Flags, sourceOf: ReadonlyMap<string, string>, configPath: string | null, foundBy: EvictionConfig['foundBy'], dropIns: string[] = [], hardInBase?: boolean): KubeletConfigRead {
  const problems: string[] = [];
  const hardFlag = flags.get('eviction-hard')?.value ?? null;
  const softFlag = flags.get('eviction-soft')?.value ?? null;
  const hardMap = hardFlag !== null ? parseEvictionFlag(hardFlag) : asMap(doc.evictionHard);
  const softMap = softFlag !== null ? parseEvictionFlag(softFlag) : asMap(doc.evictionSoft);
  // kubelet fills its defaults into a base config without evictionHard before drop-ins apply:
  // a drop-in's evictionHard then merges over the defaults, key by key
  const hardSet = hardFlag !== null || (hardInBase ?? (doc.evictionHard !== undefined && doc.evictionHard !== null));
  const merge = doc.mergeDefaultEvictionSettings === true;
  const src = (kind: 'Hard' | 'Soft', flag: string | null) => (signal: string) => (flag !== null ? `--eviction-${kind.toLowerCase()} flag` : (sourceOf.get(`eviction${kind}.${signal}`) ?? sourceOf.get(`eviction${kind}`) ?? configPath ?? 'config'));
  const thresholds = thresholdsFrom(hardMap, 'hard', 'config', problems, src('Hard', hardFlag));
  if (!hardSet || merge) {
    const defaults = new Map(Object.entries(DEFAULT_EVICTION_HARD).filter(([k]) => !hardMap.has(k)) as [string, string][]);
    thresholds.push(...thresholdsFrom(defaults, 'hard', 'default', problems, () => "kubelet's default"));
  }
  thresholds.push(...thresholdsFrom(softMap, 'soft', 'config', problems, src('Soft', softFlag)));
  const tls = typeof doc.tlsCertFile === 'string' && doc.tlsCertFile.startsWith('/') ? doc.tlsCertFile : null;
  return { eviction: { configPath, foundBy, dropIns, thresholds, checks: [], error: problems.length ? problems.join('; ') : null }, tlsCertFile: tls };
}

/** Find and read kubelet's config (kubeletPid from the /proc walk, null when no kubelet runs): flags, config, drop-ins merged. */
export async function readKubeletConfig(fs: HostFs, kubeletPid: number | null): Promise<KubeletConfigRead> {
  let argv: string[] | null = null;
  if (kubeletPid !== null) argv = await kubeletArgv(fs, kubeletPid).catch(() => null);
  const setup = await readKubeletSetup(fs, argv, kubeletPid !== null ? `/proc/${kubeletPid}/cmdline` : null);
  const base = setup.config.files.find((f) => f.role === 'config') ?? null;
  const foundBy: EvictionConfig['foundBy'] = base === null ? null : base.from === '--config' ? 'cmdline' : base.path === DEFAULT_KUBELET_CONFIG ? 'default-path' : 'distribution-path';
  const dropIns = setup.config.files.filter((f) => f.role === 'drop-in').map((f) => f.path);
  const r = evictionFromDoc(setup.config.doc, setup.flags, setup.config.sourceOf, base?.path ?? null, foundBy, dropIns, base ? setup.config.baseKeys.has('evictionHard') : undefined);
  if (setup.config.problems.length) r.eviction.error = [...setup.config.problems, r.eviction.error].filter(Boolean).join('; ');
  r.setup = setup;
  return r;
}

/** The filesystems kubelet's disk signals watch: nodefs its --root-dir, imagefs the runtime's root. */
export interface DataRoots {
  nodefs: string;
  imagefs: string;
}

export const DEFAULT_DATA_ROOTS: DataRoots = { nodefs: '/var/lib/kubelet', imagefs: '/var/lib/containerd' };

/** Each disk threshold in force against the filesystem it watches (the roots the node names, kubelet's defaults otherwise). */
export function evictionChecks(thresholds: readonly EvictionThreshold[], disks: readonly DiskUse[], roots: DataRoots = DEFAULT_DATA_ROOTS): EvictionCheck[] {
  // a path not on the host falls back to / (what holds it then); a disk not read is not checked
  const disk = (p: string) => {
    const d = disks.find((x) => x.path === p);
    return d?.present === false || d === undefined ? disks.find((x) => x.path === '/' && x.present) : d.present ? d : undefined;
  };
  const out: EvictionCheck[] = [];
  for (const t of thresholds) {
    const [fsName, what] = t.signal.split('.') as [string, string];
    if (fsName !== 'nodefs' && fsName !== 'imagefs') continue;
    const d = disk(fsName === 'nodefs' ? roots.nodefs : roots.imagefs);
    if (!d) continue;
    const inodes = what === 'inodesFree';
    const available = inodes ? d.inodesFree : d.availableBytes;
    const capacity = inodes ? d.inodesTotal : d.totalBytes;
    if (available === null || capacity === null || capacity <= 0) continue;
    const threshold = t.ratio !== null ? Math.round(t.ratio * capacity) : t.quantity!;
    out.push({ signal: t.signal, kind: t.kind, path: d.path, available, capacity, threshold, crossed: available < threshold });
  }
  return out;
}
