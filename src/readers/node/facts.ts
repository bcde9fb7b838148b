/**
 * The node facts of GET /v1/node `facts` (model/node.ts NodeFacts), each part read on
 * its own: one that cannot be read is empty with its reason in `warnings`.
 */
import type { DiskUse, NodeFacts, ProcessStates } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { kubeletCertificates } from './certs.js';
import { readConntrack } from './conntrack.js';
import { criLatencyOf } from './cri-latency.js';
import { diskUse, NODE_DISKS } from '../../view/node-health.js';
import { kubeletKubeconfig } from './kubeconfig.js';
import { DEFAULT_DATA_ROOTS, evictionChecks, readKubeletConfig, type DataRoots } from './kubelet-config.js';
import { readNodeOs } from './node-os.js';
import { walkProcStates } from './proc-states.js';
import { mountAnswers } from './statfs.js';
import { parseTaint } from './taint.js';

const errText = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code ?? (err as Error | null)?.message ?? String(err);

interface FactsOptions {
  cri?: (Parameters<typeof criLatencyOf>[0] & { endpoint?: string }) | null;
  /** the disks already read for the same answer (nodeHealth's); read here when absent */
  disks?: DiskUse[] | Promise<DiskUse[]>;
  warnings?: string[];
  signal?: AbortSignal;
  nowMs?: number;
}

const EMPTY_STATES: ProcessStates = { scanned: 0, dState: 0, zState: 0, byPod: [], samples: [], cut: null };

export async function nodeFacts(fs: HostFs, opts: FactsOptions = {}): Promise<NodeFacts> {
  const w = opts.warnings;
  const safe = async <T>(what: string, p: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await p();
    } catch (err) {
      w?.push(`${what}: unreadable (${errText(err)}), skipped`);
      return fallback;
    }
  };
  const walkP = safe('/proc (D/Z states)', () => walkProcStates(fs, {}, opts.signal), { states: { ...EMPTY_STATES, cut: 'the /proc walk failed' }, kubeletPid: null });
  const [conntrack, taintText, walk, disks] = await Promise.all([
    safe('conntrack', () => readConntrack(fs), { loaded: false as const, reason: 'unreadable' }),
    safe('/proc/sys/kernel/tainted', () => fs.readFile('/proc/sys/kernel/tainted', 64), null),
    walkP,
    opts.disks ?? Promise.all(NODE_DISKS.map((p) => diskUse(fs, p, w))),
  ]);
  if (walk.states.cut) w?.push(`/proc (D/Z states): ${walk.states.cut}`);
  const config = await safe('kubelet config', () => readKubeletConfig(fs, walk.kubeletPid), null);
  if (config?.eviction.error) w?.push(`kubelet config: ${config.eviction.error}`);
  const setup = config?.setup ?? null;
  const nodeOs = await safe('node OS', () => readNodeOs(fs, { kubeletPid: walk.kubeletPid, containerdPids: walk.containerdPids ?? [], setup, criEndpoint: opts.cri?.endpoint ?? null, ...(w ? { warnings: w } : {}) }), undefined);
  // kubelet's flags win over its config file (rke2 sets --tls-cert-file and has no config)
  const tlsFlag = setup?.flags.get('tls-cert-file')?.value;
  const tlsCertFile = tlsFlag?.startsWith('/') ? { value: tlsFlag, source: `kubelet --tls-cert-file (${setup?.flagsFrom})` } : config?.tlsCertFile ? { value: config.tlsCertFile, source: 'kubelet config tlsCertFile' } : null;
  const certificates = await safe('kubelet certificates', () => kubeletCertificates(fs, tlsCertFile, opts.nowMs, nodeOs?.kubelet.certDir, kubeletKubeconfig(nodeOs)), []);
  const eviction = config?.eviction ?? { configPath: null, foundBy: null, thresholds: [], checks: [], error: 'unreadable' };
  // nodefs and imagefs where the node keeps them (k3s: /var/lib/rancher/k3s/agent/containerd), read when the fixed list lacks them
  const roots: DataRoots = { nodefs: nodeOs?.kubelet.rootDir.value ?? DEFAULT_DATA_ROOTS.nodefs, imagefs: nodeOs?.containerd?.root?.value ?? DEFAULT_DATA_ROOTS.imagefs };
  const dataDisks = await Promise.all([...new Set([roots.nodefs, roots.imagefs])].filter((p) => p.startsWith('/') && !disks.some((d) => d.path === p)).map((p) => diskUse(fs, p, w)));
  eviction.checks = evictionChecks(eviction.thresholds, [...disks, ...dataDisks], roots);
  const taint = parseTaint(taintText);
  if (taintText !== null && taint === null) w?.push('/proc/sys/kernel/tainted: not a number, skipped');
  return {
    conntrack,
    taint,
    processes: walk.states,
    certificates,
    eviction,
    mounts: mountAnswers(),
    criLatency: criLatencyOf(opts.cri ?? null)?.snapshot() ?? { windowSeconds: 0, methods: [] },
    ...(nodeOs ? { nodeOs } : {}),
    ...(dataDisks.length ? { dataDisks } : {}),
  };
}
