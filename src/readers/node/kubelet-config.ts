/**
 * kubelet's eviction thresholds in force: evictionHard / evictionSoft from its config
 * file (KubeletConfiguration, kubelet.config.k8s.io/v1beta1), --eviction-hard /
 * --eviction-soft flags on its command line over them (flags win, as in kubelet), and
 * kubelet's Linux defaults when the file sets no evictionHard at all. A partial
 * evictionHard does not inherit the defaults for the signals it leaves out (they are
 * unset then) unless mergeDefaultEvictionSettings is true.
 *
 * The file is found from --config in /proc/<kubelet pid>/cmdline (read through the /proc
 * limiter: cmdline reads can block), else /var/lib/kubelet/config.yaml. It is tenant-
 * unreachable but still read bounded (size, YAML aliases) and through HostFs.
 */
import { createRequire } from 'node:module';
import type { DiskUse, EvictionCheck, EvictionConfig, EvictionSignal, EvictionThreshold } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { procReads, readBlocking, PROC_LIMITS } from '../proc/limiter.js';
import { parseCmdline } from '../proc/parse.js';

export const DEFAULT_KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';
/** yaml (~30 ms CPU, 70 modules) is loaded by the first config parsed, not at the agent's start. */
let yaml: typeof import('yaml') | null = null;
const parseYaml = (text: string, options: import('yaml').ParseOptions & import('yaml').DocumentOptions & import('yaml').ToJSOptions): unknown =>
  (yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text, options);
const MAX_CONFIG_BYTES = 1024 * 1024;

/** kubelet's default hard thresholds on Linux (pkg/kubelet/eviction/defaults_linux.go's values). */
export const DEFAULT_EVICTION_HARD: Readonly<Partial<Record<EvictionSignal, string>>> = {
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
export function parseEvictionFlag(v: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of v.split(',').slice(0, 16)) {
    const i = part.indexOf('<');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

/** A flag's value from a kubelet argv: --name=value or --name value. */
export function flagValue(argv: readonly string[], name: string): string | null {
  let found: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}` && i + 1 < argv.length) found = argv[++i]!;
    else if (a.startsWith(`--${name}=`)) found = a.slice(name.length + 3);
  }
  return found; // the last one wins, as with Go's flag package
}

export interface KubeletConfigRead {
  eviction: EvictionConfig;
  /** tlsCertFile from the config (the serving certificate), null when unset */
  tlsCertFile: string | null;
}

/** The kubelet's argv, read through the /proc limiter; null when it cannot be had. */
export async function kubeletArgv(fs: HostFs, pid: number): Promise<string[] | null> {
  const dir = await fs.dir(`/proc/${pid}`);
  const r = await procReads.run(() => readBlocking(`${dir.realPath}/cmdline`, PROC_LIMITS.cmdlineMaxBytes * 8));
  return r.ok && r.value ? parseCmdline(r.value.text) : null;
}

function thresholdsFrom(map: Map<string, string>, kind: 'hard' | 'soft', from: 'config' | 'default', bad: string[]): EvictionThreshold[] {
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
    out.push({ signal: signal as EvictionSignal, kind, value, ...v, from });
  }
  return out;
}

const asMap = (v: unknown): Map<string, string> => {
  const out = new Map<string, string>();
  if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v).slice(0, 32)) if (typeof x === 'string') out.set(k, x);
  return out;
};

/**
 * The thresholds in force: from the config text and argv (either may be null). Pure
 * apart from nothing: tested on real config shapes.
 */
export function evictionFrom(configText: string | null, argv: readonly string[] | null, configPath: string | null, foundBy: EvictionConfig['foundBy']): KubeletConfigRead {
  const problems: string[] = [];
  let doc: Record<string, unknown> = {};
  if (configText !== null) {
    try {
      const parsed: unknown = parseYaml(configText, { maxAliasCount: 50, prettyErrors: false });
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) doc = parsed as Record<string, unknown>;
      else problems.push(`${configPath}: not a KubeletConfiguration mapping`);
    } catch (err) {
      problems.push(`${configPath}: not YAML (${String((err as Error).message).split('\n')[0]!.slice(0, 200)})`);
    }
  }
  const hardFlag = argv ? flagValue(argv, 'eviction-hard') : null;
  const softFlag = argv ? flagValue(argv, 'eviction-soft') : null;
  const hardMap = hardFlag !== null ? parseEvictionFlag(hardFlag) : asMap(doc.evictionHard);
  const softMap = softFlag !== null ? parseEvictionFlag(softFlag) : asMap(doc.evictionSoft);
  const hardSet = hardFlag !== null || (doc.evictionHard !== undefined && doc.evictionHard !== null);
  const merge = doc.mergeDefaultEvictionSettings === true;
  const thresholds = thresholdsFrom(hardMap, 'hard', 'config', problems);
  if (!hardSet || merge) {
    const defaults = new Map(Object.entries(DEFAULT_EVICTION_HARD).filter(([k]) => !hardMap.has(k)) as [string, string][]);
    thresholds.push(...thresholdsFrom(defaults, 'hard', 'default', problems));
  }
  thresholds.push(...thresholdsFrom(softMap, 'soft', 'config', problems));
  const tls = typeof doc.tlsCertFile === 'string' && doc.tlsCertFile.startsWith('/') ? doc.tlsCertFile : null;
  return { eviction: { configPath, foundBy, thresholds, checks: [], error: problems.length ? problems.join('; ') : null }, tlsCertFile: tls };
}

/** Find and read kubelet's config (kubeletPid from the /proc walk, null when no kubelet runs). */
export async function readKubeletConfig(fs: HostFs, kubeletPid: number | null): Promise<KubeletConfigRead> {
  let argv: string[] | null = null;
  let configPath: string | null = null;
  let foundBy: EvictionConfig['foundBy'] = null;
  if (kubeletPid !== null) {
    argv = await kubeletArgv(fs, kubeletPid).catch(() => null);
    const c = argv ? flagValue(argv, 'config') : null;
    if (c && c.startsWith('/')) {
      configPath = c;
      foundBy = 'cmdline';
    }
  }
  if (configPath === null && (await fs.exists(DEFAULT_KUBELET_CONFIG))) {
    configPath = DEFAULT_KUBELET_CONFIG;
    foundBy = 'default-path';
  }
  let text: string | null = null;
  let readError: string | null = null;
  if (configPath !== null) {
    try {
      text = await fs.readFile(configPath, MAX_CONFIG_BYTES);
      if (text === null) readError = `${configPath}: absent`;
    } catch (err) {
      readError = `${configPath}: unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
  }
  const r = evictionFrom(text, argv, configPath, foundBy);
  if (readError) r.eviction.error = [readError, r.eviction.error].filter(Boolean).join('; ');
  return r;
}

/** Each disk threshold in force against the filesystem it watches (nodefs: /var/lib/kubelet, imagefs: /var/lib/containerd). */
export function evictionChecks(thresholds: readonly EvictionThreshold[], disks: readonly DiskUse[]): EvictionCheck[] {
  // a path not on the host falls back to / (what holds it then); a disk not read is not checked
  const disk = (p: string) => {
    const d = disks.find((x) => x.path === p);
    return d?.present === false || d === undefined ? disks.find((x) => x.path === '/' && x.present) : d.present ? d : undefined;
  };
  const out: EvictionCheck[] = [];
  for (const t of thresholds) {
    const [fsName, what] = t.signal.split('.') as [string, string];
    if (fsName !== 'nodefs' && fsName !== 'imagefs') continue;
    const d = disk(fsName === 'nodefs' ? '/var/lib/kubelet' : '/var/lib/containerd');
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
