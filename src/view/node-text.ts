/**
 * The node OS rows of GET /v1/node?format=text: the distribution, and each kubelet and
 * runtime fact with where it came from (a flag on a command line, a file, a known path,
 * a default). Values come from the node's own files and command lines: the table
 * renderer escapes control characters.
 */
import type { NodeFacts, Sourced } from '../model/node.js';

const src = (s: Sourced | null | undefined) => (s ? `${s.value} (from ${s.source})` : 'not found');

export function nodeOsRows(f: NodeFacts): string[][] {
  const os = f.nodeOs;
  if (!os) return [['node os', 'not read (see warnings)']];
  const d = os.distribution;
  const rows: string[][] = [
    ['distribution', d.id === null ? `unknown (${d.source})` : `${d.prettyName ?? d.name ?? d.id}${d.versionId && !(d.prettyName ?? '').includes(d.versionId) ? ` ${d.versionId}` : ''} (id ${d.id}, from ${d.source})`],
    ['flavor', os.flavor ? `${os.flavor.name} (from ${os.flavor.evidence})` : 'not recognised'],
    ['kubelet flags', os.kubelet.pid !== null ? `pid ${os.kubelet.pid}, from ${os.kubelet.flagsFrom}` : os.kubelet.flagsFrom ? `no kubelet process seen; from ${os.kubelet.flagsFrom}` : 'no kubelet process seen, no flags file'],
    ['kubelet config', src(os.kubelet.config)],
    ['kubelet config-dir', src(os.kubelet.configDir)],
    ...os.kubelet.files.filter((x) => x.role === 'drop-in').map((x) => ['kubelet drop-in', `${x.path} (from ${x.from})`]),
    ['kubelet kubeconfig', src(os.kubelet.kubeconfig)],
    ['kubelet cert-dir', src(os.kubelet.certDir)],
    ['kubelet root-dir', src(os.kubelet.rootDir)],
    ['kubelet cgroup driver', src(os.kubelet.cgroupDriver)],
    ['kubelet runtime endpoint', src(os.kubelet.containerRuntimeEndpoint)],
    ['cri endpoint', src(os.criEndpoint)],
  ];
  const c = os.containerd;
  if (c) {
    rows.push(
      ['containerd', `pid ${c.pid ?? '?'}${c.configVersion !== null ? `, config version ${c.configVersion}` : ''}`],
      ['containerd config', src(c.config)],
      ['containerd root', src(c.root)],
      ['containerd cgroup driver', src(c.cgroupDriver)],
    );
  } else rows.push(['containerd', 'no containerd process seen']);
  if (os.cgroup.kernelCmdline) rows.push(['kernel cgroup switches', src(os.cgroup.kernelCmdline)]);
  return rows;
}
