/**
 * The CNI state a runtime's NetworkReady condition depends on: the network
 * configuration files (libcni loads *.conf, *.conflist, *.json from the conf
 * dir, lexically first wins) and the plugin binaries those files name. Read
 * under the host root; the dirs come from the runtime's own config when it
 * says (containerd: Status verbose info config.cni.confDir/binDir).
 */
import { redactDeep, redactText } from '../../redact.js';
import type { HostFs } from '../hostfs/hostfs.js';

const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';
const DEFAULT_CNI_BIN_DIR = '/opt/cni/bin';
const CONF_EXTENSIONS = ['.conf', '.conflist', '.json'];
const MAX_CONF_BYTES = 64 * 1024;
const MAX_ENTRIES = 200;

interface CniConfFile {
  name: string;
  /** host path */
  path: string;
  /** the network name, when the file parses */
  network: string | null;
  /** plugin types in chain order (a .conf has one) */
  plugins: string[];
  /** why the file is unusable (unparsable JSON, no plugins), or null */
  error: string | null;
  /** the first characters of the file, for evidence, redacted (cniExcerpt) */
  excerpt: string;
}

export interface CniState {
  confDir: string;
  binDir: string;
  /** where the dirs came from */
  dirsFrom: 'runtime' | 'default';
  confDirExists: boolean;
  binDirExists: boolean;
  /** config files libcni would consider, sorted as it sorts them */
  confFiles: CniConfFile[];
  /** executables in the bin dir (names) */
  plugins: string[];
  /** plugin types named by the first usable config that the bin dir lacks */
  missingPlugins: string[];
}

/** Parse one CNI network config (.conf) or list (.conflist): pure. */
function parseCniConf(name: string, text: string): Pick<CniConfFile, 'network' | 'plugins' | 'error'> {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (err) {
    // V8 quotes the text around the fault (`Unexpected token 'S', ..."assword": S3cret}" is not
    // valid JSON`): a cut redaction cannot recognise, so the token and the quote are dropped
    const why = (err as Error).message.replace(/^Unexpected token '[\s\S]{1,2}', (?:\.\.\.)?"[\s\S]*" is not valid JSON$/, 'Unexpected token: not valid JSON').slice(0, 200);
    return { network: null, plugins: [], error: `not JSON: ${why}` };
  }
  if (!j || typeof j !== 'object') return { network: null, plugins: [], error: 'not a JSON object' };
  const o = j as { name?: unknown; type?: unknown; plugins?: unknown };
  const network = typeof o.name === 'string' ? o.name : null;
  if (name.endsWith('.conflist') || Array.isArray(o.plugins)) {
    const list = Array.isArray(o.plugins) ? o.plugins : [];
    const plugins = list.map((p) => (p && typeof p === 'object' && typeof (p as { type?: unknown }).type === 'string' ? (p as { type: string }).type : '')).filter(Boolean);
    if (plugins.length === 0) return { network, plugins, error: 'a conflist with no plugins' };
    return { network, plugins, error: network ? null : 'no network name' };
  }
  if (typeof o.type !== 'string') return { network, plugins: [], error: 'no plugin type' };
  return { network, plugins: [o.type], error: network ? null : 'no network name' };
}

/** Characters of a CNI config quoted as evidence. */
const CNI_EXCERPT_CHARS = 400;

/**
 * A CNI config file as evidence: its credentials redacted before anything quotes it
 * (Calico's conflist holds `etcd_password`, `k8s_auth_token`; others hold API keys).
 * A file that parses is redacted as a document, by key (redactDeep), and its own
 * text kept when nothing in it changed; one that does not parse (cut, hand-edited)
 * gets the text rules over all of it, then is cut, so no cut leaves half a secret.
 */
function cniExcerpt(text: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return redactText(text).slice(0, CNI_EXCERPT_CHARS);
  }
  const r = redactDeep(doc);
  return (r === doc ? text : JSON.stringify(r)).slice(0, CNI_EXCERPT_CHARS);
}

/**
 * containerd's cni dirs from CRI Status verbose info, when it has them. containerd 2.x
 * sends `binDir: ""` beside a `binDirs` list (the plugins are looked up in each, in
 * order): the first of those is the one reported.
 */
export function cniDirsFromRuntimeInfo(info: Record<string, unknown> | null | undefined): { confDir: string; binDir: string } | null {
  const cni = (info?.config as { cni?: { confDir?: unknown; binDir?: unknown; binDirs?: unknown } } | undefined)?.cni;
  if (!cni || typeof cni.confDir !== 'string' || !cni.confDir) return null;
  const firstOfList = Array.isArray(cni.binDirs) ? cni.binDirs.find((d): d is string => typeof d === 'string' && d !== '') : undefined;
  const binDir = typeof cni.binDir === 'string' && cni.binDir ? cni.binDir : firstOfList;
  return binDir ? { confDir: cni.confDir, binDir } : null;
}

export async function readCniState(fs: HostFs, dirs: { confDir: string; binDir: string } | null): Promise<CniState> {
  const confDir = dirs?.confDir ?? DEFAULT_CNI_CONF_DIR;
  const binDir = dirs?.binDir ?? DEFAULT_CNI_BIN_DIR;
  const [confEntries, binEntries] = await Promise.all([fs.dir(confDir).then((d) => fs.readdir(d)), fs.dir(binDir).then((d) => fs.readdir(d))]);
  const confNames = (confEntries ?? [])
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && CONF_EXTENSIONS.some((x) => e.name.endsWith(x)))
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_ENTRIES);
  const confFiles = await Promise.all(
    confNames.map(async (name): Promise<CniConfFile> => {
      const path = `${confDir.replace(/\/$/, '')}/${name}`;
      const text = await fs.readFile(path, MAX_CONF_BYTES);
      if (text === null) return { name, path, network: null, plugins: [], error: 'unreadable', excerpt: '' };
      return { name, path, ...parseCniConf(name, text), excerpt: cniExcerpt(text) };
    }),
  );
  const plugins = (binEntries ?? [])
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_ENTRIES);
  const first = confFiles.find((f) => f.error === null);
  const missingPlugins = first ? first.plugins.filter((p) => !plugins.includes(p)) : [];
  return {
    confDir,
    binDir,
    dirsFrom: dirs ? 'runtime' : 'default',
    confDirExists: confEntries !== null,
    binDirExists: binEntries !== null,
    confFiles,
    plugins,
    missingPlugins,
  };
}
