/**
 * The node OS and where kubelet's and the runtime's setup came from (/v1/node
 * facts.nodeOs): /etc/os-release under the host root, kubelet's flags and config files
 * (kubelet-flags.ts), containerd's command line and the top of its config (version,
 * root, grpc address: the only parts the agent uses), and the CRI endpoint in use.
 */
import type { NodeOs, Sourced } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { CONTAINERD_DEFAULTS, CONTAINERD_UNIT_DROPIN_DIRS, KUBELET_FLAG_DEFAULTS, NODE_OS_LIMITS, NOT_CRI_SOCKETS, OS_IDS } from '../../rules/node-os.js';
import { discoveredEndpoint, socketHostPath } from '../cri/endpoint.js';
import { kubeletArgv } from './kubelet-config.js';
import { parseFlags, type KubeletSetup } from './kubelet-flags.js';

/** os-release(5): KEY=value lines, values optionally quoted. */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').slice(0, 200)) {
    const m = /^([A-Z0-9_]{1,64})=(.*)$/.exec(line.trim());
    if (!m) continue;
    out[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1').replace(/\\(["'$`\\])/g, '$1').slice(0, 256);
  }
  return out;
}

/**
 * The keys of a containerd config.toml the agent uses: `version`, `root`, `[grpc]
 * address` and the runc runtime's `SystemdCgroup`. A line reader, not a TOML parser: enough for the
 * files containerd and the distributions write (config version 2 or 3).
 */
export function containerdConfigTop(text: string): { version: number | null; root: string | null; address: string | null; systemdCgroup: boolean | null } {
  let table = '';
  const r = { version: null as number | null, root: null as string | null, address: null as string | null, systemdCgroup: null as boolean | null };
  for (const raw of text.split('\n').slice(0, 20_000)) {
    const line = raw.trim();
    const t = /^\[\s*([^\]]{1,256})\s*\]$/.exec(line);
    if (t) {
      table = t[1]!.trim();
      continue;
    }
    const kv = /^([A-Za-z0-9_]{1,64})\s*=\s*(.{0,4096})$/.exec(line);
    if (!kv) continue;
    const str = /^["'](.*)["']\s*(#.*)?$/.exec(kv[2]!.trim())?.[1] ?? null;
    if (table === '' && kv[1] === 'version') r.version = Number.parseInt(kv[2]!, 10) || null;
    if (table === '' && kv[1] === 'root') r.root = str;
    if (table === 'grpc' && kv[1] === 'address') r.address = str;
    // config version 2 (io.containerd.grpc.v1.cri) and 3 (io.containerd.cri.v1.runtime): the runc runtime's options
    if (kv[1] === 'SystemdCgroup' && /\.runtimes\.['"]?runc['"]?\.options$/.test(table)) r.systemdCgroup = /^true\b/.test(kv[2]!.trim());
  }
  return r;
}

const sourced = (value: string | null | undefined, source: string): Sourced | null => (value ? { value, source } : null);

export async function readNodeOs(
  fs: HostFs,
  o: { kubeletPid: number | null; containerdPids: number[]; setup: KubeletSetup | null; criEndpoint: string | null; warnings?: string[] },
): Promise<NodeOs> {
  // absent (null) and unreadable (an error: a directory, a link out of the host root, EACCES) are
  // different answers: the second is said, never shown as a node without the file
  let osUnreadable: string | null = null;
  const osText = await fs.readFile('/etc/os-release', NODE_OS_LIMITS.maxOsReleaseBytes).catch((err: unknown) => {
    osUnreadable = (err as NodeJS.ErrnoException | null)?.code ?? (err as Error | null)?.message ?? String(err);
    o.warnings?.push(`/etc/os-release: unreadable (${osUnreadable}), the distribution is unknown`);
    return null;
  });
  const osr = osText ? parseOsRelease(osText) : {};
  const id = osr.ID ?? null;
  const flags = o.setup?.flags ?? new Map();
  const flagsFrom = o.setup?.flagsFrom ?? null;
  const fromFlag = (name: string) => {
    const f = flags.get(name);
    return f ? { value: f.value, source: `kubelet --${name} (${flagsFrom})` } : null;
  };
  const doc = o.setup?.config.doc ?? {};
  const docSource = (key: string) => o.setup?.config.sourceOf.get(key) ?? 'config';
  const cre = fromFlag('container-runtime-endpoint') ?? sourced(typeof doc.containerRuntimeEndpoint === 'string' ? doc.containerRuntimeEndpoint : null, `kubelet config containerRuntimeEndpoint (${docSource('containerRuntimeEndpoint')})`);
  const base = o.setup?.config.files.find((f) => f.role === 'config');
  const kubelet: NodeOs['kubelet'] = {
    pid: o.kubeletPid,
    flagsFrom,
    config: fromFlag('config') ?? (base ? { value: base.path, source: base.from } : null),
    configDir: fromFlag('config-dir') ?? (o.setup?.config.files.some((f) => f.role === 'drop-in') ? { value: o.setup.config.files.find((f) => f.role === 'drop-in')!.path.replace(/\/[^/]*$/, ''), source: 'known path' } : null),
    kubeconfig: fromFlag('kubeconfig'),
    certDir: fromFlag('cert-dir') ?? { value: KUBELET_FLAG_DEFAULTS['cert-dir'], source: "kubelet's default" },
    rootDir: fromFlag('root-dir') ?? { value: KUBELET_FLAG_DEFAULTS['root-dir'], source: "kubelet's default" },
    cgroupDriver: fromFlag('cgroup-driver') ?? sourced(typeof doc.cgroupDriver === 'string' ? doc.cgroupDriver : null, `kubelet config cgroupDriver (${docSource('cgroupDriver')})`),
    containerRuntimeEndpoint: cre,
    files: o.setup?.config.files ?? [],
  };
  // containerd: the CRI one (Talos runs a second, system containerd: never that one)
  let containerd: NodeOs['containerd'] = null;
  for (const pid of o.containerdPids) {
    const argv = await kubeletArgv(fs, pid).catch(() => null);
    if (!argv) continue;
    const cf = parseFlags(argv);
    const address = cf.get('address')?.value ?? null;
    if (address !== null && NOT_CRI_SOCKETS.includes(socketHostPath(address) ?? '')) continue;
    const where = `/proc/${pid}/cmdline`;
    const configPath = cf.get('config')?.value ?? CONTAINERD_DEFAULTS.config;
    const text = configPath.startsWith('/') ? await fs.readFile(configPath, NODE_OS_LIMITS.maxConfigBytes).catch(() => null) : null;
    const top = text ? containerdConfigTop(text) : { version: null, root: null, address: null, systemdCgroup: null };
    const setBy = cf.get('config') ? await unitSetting(fs, CONTAINERD_UNIT_DROPIN_DIRS, 'CONTAINERD_CONFIG', configPath) : null;
    const cfgSrc = cf.get('config') ? `containerd --config (${where})${setBy ? `, CONTAINERD_CONFIG set by ${setBy}` : ''}` : "containerd's default";
    containerd = {
      pid,
      config: text !== null ? { value: configPath, source: cfgSrc } : null,
      address: sourced(address, `containerd --address (${where})`) ?? sourced(top.address, `[grpc] address (${configPath})`),
      root: sourced(cf.get('root')?.value, `containerd --root (${where})`) ?? sourced(top.root, `root (${configPath})`) ?? (text !== null || !cf.get('config') ? { value: CONTAINERD_DEFAULTS.root, source: "containerd's default" } : null),
      configVersion: top.version,
      cgroupDriver: top.systemdCgroup === null ? null : { value: top.systemdCgroup ? 'systemd' : 'cgroupfs', source: `runc options SystemdCgroup = ${top.systemdCgroup} (${configPath})` },
    };
    break;
  }
  const flavor = flavorOf(id, kubelet, containerd, o.setup);
  const found = o.criEndpoint ? discoveredEndpoint(fs.root) : null;
  const criEndpoint: Sourced | null = o.criEndpoint === null ? null : found && found.endpoint === o.criEndpoint ? { value: o.criEndpoint, source: found.source } : { value: o.criEndpoint, source: '--cri-endpoint (or NODETRUTH_CRI_ENDPOINT)' };
  return {
    distribution: { id, versionId: osr.VERSION_ID ?? null, prettyName: osr.PRETTY_NAME ?? null, name: id ? (OS_IDS[id] ?? osr.NAME ?? id) : null, source: osText ? '/etc/os-release' : osUnreadable ? `/etc/os-release (unreadable: ${osUnreadable})` : '/etc/os-release (absent)' },
    flavor,
    kubelet,
    containerd,
    criEndpoint,
    cgroup: { kernelCmdline: await cgroupCmdline(fs) },
  };
}

/** systemd's cgroup switches on the kernel command line (systemd.unified_cgroup_hierarchy=0 keeps cgroup v1). */
async function cgroupCmdline(fs: HostFs): Promise<Sourced | null> {
  const text = await fs.readFile('/proc/cmdline', NODE_OS_LIMITS.maxOsReleaseBytes).catch(() => null);
  const words = (text ?? '').split(/\s+/).slice(0, 512).filter((w) => /^(systemd\.unified_cgroup_hierarchy|systemd\.legacy_systemd_cgroup_controller|cgroup_no_v1|cgroup_enable)(=|$)/.test(w));
  return words.length ? { value: words.join(' ').slice(0, 1024), source: '/proc/cmdline' } : null;
}

/**
 * Which systemd drop-in of a unit sets `Environment=NAME=value` to this value (Flatcar
 * keeps upgraded nodes on cgroupfs through containerd.service.d/10-use-cgroupfs.conf
 * setting CONTAINERD_CONFIG). Bounded: files per directory, bytes per file.
 */
async function unitSetting(fs: HostFs, dirs: readonly string[], name: string, value: string): Promise<string | null> {
  for (const d of dirs) {
    const entries = await fs.readdir(await fs.dir(d)).catch(() => null);
    if (!entries) continue;
    const names = entries.filter((e) => e.name.endsWith('.conf')).map((e) => e.name).sort().slice(0, NODE_OS_LIMITS.maxDropIns);
    let found: string | null = null;
    for (const n of names) {
      const text = await fs.readFile(`${d}/${n}`, 64 * 1024).catch(() => null);
      for (const line of (text ?? '').split('\n').slice(0, 1000)) {
        const m = /^\s*Environment\s*=\s*"?([A-Za-z_][A-Za-z0-9_]*)=([^"\s]*)"?\s*$/.exec(line);
        if (m && m[1] === name) found = m[2] === value ? `${d}/${n}` : null; // a later drop-in wins, as in systemd
      }
    }
    if (found) return found;
  }
  return null;
}

/** Which Kubernetes distribution runs here, from what its kubelet and containerd show. */
function flavorOf(id: string | null, kubelet: NodeOs['kubelet'], containerd: NodeOs['containerd'], setup: KubeletSetup | null): NodeOs['flavor'] {
  const socket = containerd?.address?.value ?? kubelet.containerRuntimeEndpoint?.value ?? '';
  const paths = [kubelet.config?.value, kubelet.kubeconfig?.value, containerd?.config?.value, containerd?.root?.value].filter(Boolean).join(' ');
  if (paths.includes('/var/lib/rancher/rke2')) return { name: 'rke2', evidence: paths.split(' ').find((p) => p.includes('/var/lib/rancher/rke2'))! };
  if (paths.includes('/var/lib/rancher/k3s') || socket.includes('/run/k3s/containerd/')) return { name: 'k3s', evidence: socket.includes('/run/k3s/') ? `${socket} (${containerd?.address?.source ?? kubelet.containerRuntimeEndpoint?.source})` : paths };
  if (id === 'talos') return { name: 'talos', evidence: '/etc/os-release ID=talos' };
  if (id === 'bottlerocket') return { name: 'bottlerocket', evidence: '/etc/os-release ID=bottlerocket' };
  if (id === 'cos') return { name: 'gke', evidence: '/etc/os-release ID=cos' };
  const cfg = kubelet.config?.value ?? '';
  if (cfg === '/etc/kubernetes/kubelet/config.json') return { name: 'eks', evidence: `kubelet config ${cfg} (${kubelet.config!.source})` };
  if (cfg === '/etc/default/kubeletconfig.json' || setup?.flagsFrom?.startsWith('/etc/default/kubelet')) return { name: 'aks', evidence: cfg ? `kubelet config ${cfg}` : setup!.flagsFrom! };
  if (cfg === '/home/kubernetes/kubelet-config.yaml') return { name: 'gke', evidence: `kubelet config ${cfg}` };
  if (kubelet.kubeconfig?.value === '/etc/kubernetes/kubelet.conf') return { name: 'kubeadm', evidence: `kubelet --kubeconfig /etc/kubernetes/kubelet.conf (${kubelet.kubeconfig.source})` };
  return null;
}
