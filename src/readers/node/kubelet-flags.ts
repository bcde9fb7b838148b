/**
 * kubelet's setup as the node states it: its command line (the kubelet process under the
 * host's /proc, or a distribution's flags file when no process is seen), then its config
 * file and --config-dir drop-ins merged as kubelet merges them.
 *
 * kubelet's drop-in merge (--config-dir, KEP-3983): the files under the directory whose
 * names end in ".conf", in its walk's order (dropInNames), each applied over the result so far as a JSON
 * merge patch: mappings merge key by key (evictionHard's keys one by one), lists and
 * scalars are replaced, the later file wins. Every read is bounded (files, bytes, args);
 * paths are read through HostFs (inside the host root, links out refused).
 */
import { createRequire } from 'node:module';
import type { HostFs } from '../hostfs/hostfs.js';
import { KUBELET_CONFIG_PATHS, KUBELET_FLAG_FILES, NODE_OS_LIMITS } from '../../rules/node-os.js';

/** Flags with a value: `--name value` takes the next argv element only for these (kubelet has boolean flags too). */
const VALUE_FLAGS = new Set([
  'config', 'config-dir', 'kubeconfig', 'bootstrap-kubeconfig', 'cert-dir', 'container-runtime-endpoint', 'root-dir',
  'eviction-hard', 'eviction-soft', 'node-ip', 'hostname-override', 'cloud-provider', 'node-labels', 'containerd',
  'tls-cert-file', 'tls-private-key-file', 'client-ca-file', 'log-file', 'v', 'runtime-cgroups', 'pod-manifest-path',
  // containerd's own
  'address', 'root', 'state', 'log-level',
]);
/** containerd's short forms (containerd -c FILE -a SOCKET) */
const SHORT: Record<string, string> = { c: 'config', a: 'address', l: 'log-level' };

/** name → last value, and the argv element it came from (as Go's flag package: the last one wins) */
export type Flags = Map<string, { value: string; arg: string }>;

/** Parse `--flag=value`, `--flag value`, `-flag=value` and containerd's `-c value`; bounded in args and value length. */
export function parseFlags(argv: readonly string[]): Flags {
  const out: Flags = new Map();
  const n = Math.min(argv.length, NODE_OS_LIMITS.maxArgs);
  for (let i = 1; i < n; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a === '-' || a === '--') continue;
    const body = a.replace(/^--?/, '');
    const eq = body.indexOf('=');
    let name = eq >= 0 ? body.slice(0, eq) : body;
    if (!a.startsWith('--') && SHORT[name]) name = SHORT[name]!;
    if (name.length === 0 || name.length > 64) continue;
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (VALUE_FLAGS.has(name) && i + 1 < n && !argv[i + 1]!.startsWith('--')) value = argv[++i]!;
    else value = 'true';
    out.set(name, { value: value.slice(0, NODE_OS_LIMITS.maxValueChars), arg: `--${name}` });
  }
  return out;
}

/** `KUBELET_FLAGS=--a=b --c d` lines (AKS /etc/default/kubelet): that variable's words as an argv. */
export function flagsFromEnvFile(text: string, variable: string): string[] | null {
  for (const line of text.split('\n').slice(0, 1000)) {
    const m = new RegExp(`^\\s*${variable}=(.*)$`).exec(line);
    if (!m) continue;
    const v = m[1]!.trim().replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
    return ['kubelet', ...v.split(/\s+/).filter(Boolean)];
  }
  return null;
}

let yaml: typeof import('yaml') | null = null;
/** YAML (and so JSON) of a kubelet config file (or another of kubelet's files: `what` names its kind): a mapping, or why not. */
export function parseConfigDoc(text: string, where: string, what = 'KubeletConfiguration'): { doc: Record<string, unknown> } | { error: string } {
  try {
    const parsed: unknown = (yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text, { maxAliasCount: 50, prettyErrors: false });
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return { doc: parsed as Record<string, unknown> };
    return { error: `${where}: not a ${what} mapping` };
  } catch (err) {
    return { error: `${where}: not YAML (${String((err as Error).message).split('\n')[0]!.slice(0, 200)})` };
  }
}

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** RFC 7386 JSON merge patch (what kubelet applies per drop-in): null deletes, mappings merge, the rest replaces. */
export function mergePatch(base: unknown, patch: unknown, depth = 0): unknown {
  if (!isMap(patch) || depth > 32) return patch;
  const out: Record<string, unknown> = isMap(base) ? { ...base } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v, depth + 1);
  }
  return out;
}

export interface ConfigFile {
  path: string;
  role: 'config' | 'drop-in';
  /** how the file was found: `--config` / `--config-dir` flag, or a distribution's known path */
  from: string;
}

interface MergedConfig {
  /** the merged KubeletConfiguration ({} when no file was read) */
  doc: Record<string, unknown>;
  /** the files read, in the order applied */
  files: ConfigFile[];
  /** for each top-level key and each evictionHard / evictionSoft signal: the file that set it last */
  sourceOf: Map<string, string>;
  /** the top-level keys the base config file itself sets (kubelet defaults the rest before drop-ins apply) */
  baseKeys: Set<string>;
  problems: string[];
}

/** Merge a base config and its drop-ins in order; pure. */
export function mergeConfigs(parts: ReadonlyArray<{ file: ConfigFile; text: string }>): MergedConfig {
  let doc: Record<string, unknown> = {};
  const sourceOf = new Map<string, string>();
  const problems: string[] = [];
  const files: ConfigFile[] = [];
  const baseKeys = new Set<string>();
  for (const { file, text } of parts) {
    const p = parseConfigDoc(text, file.path);
    if ('error' in p) {
      problems.push(p.error);
      continue;
    }
    files.push(file);
    if (file.role === 'config') for (const k of Object.keys(p.doc)) baseKeys.add(k);
    doc = mergePatch(doc, p.doc) as Record<string, unknown>;
    for (const [k, v] of Object.entries(p.doc)) {
      sourceOf.set(k, file.path);
      if ((k === 'evictionHard' || k === 'evictionSoft') && isMap(v)) for (const s of Object.keys(v).slice(0, 32)) sourceOf.set(`${k}.${s}`, file.path);
    }
  }
  return { doc, files, sourceOf, baseKeys, problems };
}

/** One config file or drop-in (or kubelet's kubeconfig), bounded: a file over the bound is skipped with a reason, never cut. */
export async function readConfigFile(fs: HostFs, hostPath: string, maxBytes: number = NODE_OS_LIMITS.maxConfigBytes): Promise<{ text: string } | { error: string } | null> {
  let fh;
  try {
    fh = await fs.openFile(hostPath);
  } catch (err) {
    return { error: `${hostPath}: refused (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if (fh === null) return null;
  try {
    const st = await fh.stat();
    if (st.size > maxBytes) return { error: `${hostPath}: ${st.size} bytes, over the ${maxBytes}-byte bound: skipped` };
    const buf = Buffer.alloc(maxBytes);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { text: buf.toString('utf8', 0, bytesRead) };
  } finally {
    await fh.close();
  }
}

/** Go's sort order for names (os.ReadDir sorts by bytes): UTF-8 byte order, not UTF-16 code units. */
export const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The drop-ins kubelet reads from --config-dir, in the order it applies them: kubelet
 * walks the directory with filepath.WalkDir (cmd/kubelet/app/server.go
 * mergeKubeletConfigurations), so every file whose name ends in ".conf" counts,
 * subdirectories included, each directory's entries in byte order of their names and a
 * subdirectory's files where its name sorts; a link is not descended into (a link named
 * *.conf is read as a file). Bounded: entries looked at in all, directories, depth, drop-ins
 * read; a cut says so in `problems`.
 */
async function dropInNames(fs: HostFs, dirPath: string, problems: string[]): Promise<string[]> {
  const out: string[] = [];
  let seen = 0;
  let dirs = 0;
  let cut = false;
  const visit = async (rel: string, depth: number): Promise<void> => {
    const hostDir = rel === '' ? dirPath : `${dirPath}/${rel}`;
    let entries;
    try {
      entries = await fs.readdir(await fs.dir(hostDir));
    } catch (err) {
      problems.push(`${hostDir}: refused (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      return;
    }
    if (entries === null) return;
    for (const e of entries.sort((a, b) => byBytes(a.name, b.name))) {
      if (++seen > NODE_OS_LIMITS.maxDirEntries) {
        cut = true;
        return;
      }
      const name = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (depth >= NODE_OS_LIMITS.maxDropInDepth) problems.push(`${dirPath}/${name}: deeper than ${NODE_OS_LIMITS.maxDropInDepth} directories, not walked`);
        else if (++dirs > NODE_OS_LIMITS.maxDropInDirs) {
          problems.push(`${dirPath}: over ${NODE_OS_LIMITS.maxDropInDirs} directories, the rest not walked`);
          cut = true;
          return;
        } else await visit(name, depth + 1);
      } else if (e.name.endsWith('.conf')) out.push(name);
      if (cut) return;
    }
  };
  await visit('', 0);
  if (seen > NODE_OS_LIMITS.maxDirEntries) problems.push(`${dirPath}: over ${NODE_OS_LIMITS.maxDirEntries} entries, only the first looked at`);
  if (out.length > NODE_OS_LIMITS.maxDropIns) {
    problems.push(`${dirPath}: ${out.length} drop-ins, only the first ${NODE_OS_LIMITS.maxDropIns} (kubelet's order) read: the merged config may differ from kubelet's`);
    return out.slice(0, NODE_OS_LIMITS.maxDropIns);
  }
  return out;
}

export interface KubeletSetup {
  /** where the flags came from: `/proc/<pid>/cmdline`, a flags file, or null (no kubelet seen) */
  flagsFrom: string | null;
  flags: Flags;
  config: MergedConfig;
  /** the distribution whose known path gave the config, when no flag named it */
  distributionPath: string | null;
}

/** Read kubelet's flags (argv from its process, else a distribution's flags file), then its config and drop-ins. */
export async function readKubeletSetup(fs: HostFs, argv: string[] | null, argvFrom: string | null): Promise<KubeletSetup> {
  const problems: string[] = [];
  let flagsFrom = argv ? argvFrom : null;
  let flags = argv ? parseFlags(argv) : new Map();
  if (!argv) {
    for (const f of KUBELET_FLAG_FILES) {
      const r = await readConfigFile(fs, f.path);
      if (r === null) continue;
      if ('error' in r) {
        problems.push(r.error);
        continue;
      }
      const a = flagsFromEnvFile(r.text, f.variable);
      if (a) {
        flags = parseFlags(a);
        flagsFrom = `${f.path} (${f.variable})`;
        break;
      }
    }
  }
  const files: Array<{ file: ConfigFile; text: string }> = [];
  let distributionPath: string | null = null;
  let configPath = flags.get('config')?.value ?? null;
  let configFrom = '--config';
  let configDir = flags.get('config-dir')?.value ?? null;
  let dirFrom = '--config-dir';
  if (configPath !== null && !configPath.startsWith('/')) {
    problems.push(`--config ${JSON.stringify(configPath.slice(0, 200))}: not an absolute path, not read`);
    configPath = null;
  }
  if (configPath === null && configDir === null) {
    for (const known of KUBELET_CONFIG_PATHS) {
      if (!(await fs.exists(known.config))) continue;
      configPath = known.config;
      configFrom = `known path (${known.distribution})`;
      distributionPath = known.distribution;
      if (known.configDir && (await fs.exists(known.configDir))) {
        configDir = known.configDir;
        dirFrom = `known path (${known.distribution})`;
      }
      break;
    }
  }
  if (configPath !== null) {
    const r = await readConfigFile(fs, configPath);
    if (r === null) problems.push(`${configPath}: absent`);
    else if ('error' in r) problems.push(r.error);
    else files.push({ file: { path: configPath, role: 'config', from: configFrom }, text: r.text });
  }
  if (configDir !== null && !configDir.startsWith('/')) problems.push(`--config-dir ${JSON.stringify(configDir.slice(0, 200))}: not an absolute path, not read`);
  if (configDir !== null && configDir.startsWith('/')) {
    const dir = configDir.replace(/\/+$/, '');
    for (const name of await dropInNames(fs, dir, problems)) {
      const p = `${dir}/${name}`;
      const r = await readConfigFile(fs, p);
      // a link is followed inside the host root only: one to a path the host root lacks reads as absent
      if (r === null) problems.push(`${p}: absent (a link to nothing inside the host root), skipped`);
      else if ('error' in r) problems.push(r.error);
      else files.push({ file: { path: p, role: 'drop-in', from: dirFrom }, text: r.text });
    }
  }
  const config = mergeConfigs(files);
  config.problems.unshift(...problems);
  return { flagsFrom, flags, config, distributionPath };
}
