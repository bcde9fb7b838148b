/** The container runtime: unreachable, not answering, RuntimeReady or NetworkReady false (with the CNI state as evidence). */
import type { Evidence, Finding } from '../../model/triage.js';
import { clip } from '../../format.js';
import { idsOf } from '../findings.js';
import { failureCode, type TriageSnapshot } from '../snapshot.js';
import type { Rule } from './rule.js';

export const runtimeRule: Rule = {
  name: 'runtime',
  ids: idsOf('runtime'),
  run(s) {
    const endpoint = s.criEndpoint ?? '(none found)';
    if (!s.runtime.ok) {
      const code = failureCode(s.runtime);
      const timeout = code === 'runtime_timeout' || code === 'source_timeout';
      return [
        {
          id: timeout ? 'runtime-not-answering' : 'runtime-unreachable',
          severity: 'critical',
          title: timeout ? 'The container runtime does not answer' : 'The container runtime is unreachable',
          detail: s.runtime.error,
          evidence: [{ source: 'cri', call: `Version, Status on ${endpoint}`, excerpt: s.runtime.error }],
          hint: timeout
            ? 'The runtime accepts connections but does not answer in time: it is wedged (stopped, deadlocked, or its disk hangs). Check its state (ps -o pid,stat,wchan -C containerd), its log (GET /v1/logs?query=containerd), and `kill -USR1 $(pidof containerd)` dumps its goroutines to that log.'
            : s.criEndpoint
              ? 'Nothing answers on the CRI socket: check `systemctl status containerd` and its log (GET /v1/logs?query=containerd); if the socket path is unusual pass --cri-endpoint.'
              : 'No CRI socket was found under the host root: is this a Kubernetes node, and is the host root mounted (--host-root)? Pass --cri-endpoint if the socket is elsewhere.',
        },
      ];
    }
    const out: Finding[] = [];
    const cond = (t: string) => s.runtime.ok && s.runtime.value.status.conditions.find((c) => c.type === t);
    const rr = cond('RuntimeReady');
    if (rr && !rr.status) {
      out.push({
        id: 'runtime-not-ready',
        severity: 'critical',
        title: 'The container runtime reports RuntimeReady=false',
        detail: `${rr.reason || 'no reason given'}${rr.message ? `: ${rr.message}` : ''}`,
        evidence: [{ source: 'cri', call: `Status on ${endpoint}`, excerpt: `RuntimeReady=false reason=${rr.reason} message=${rr.message}` }],
        hint: 'kubelet will not start pods on this node; read the runtime log around now (GET /v1/logs?query=containerd&tailLines=200).',
      });
    }
    const nr = cond('NetworkReady');
    if (nr && !nr.status) out.push(networkNotReady(s, nr.reason, nr.message));
    return out;
  },
};

function networkNotReady(s: TriageSnapshot, reason: string, message: string): Finding {
  const evidence: Evidence[] = [{ source: 'cri', call: `Status on ${s.criEndpoint}`, excerpt: `NetworkReady=false reason=${reason} message=${message}` }];
  let detail = `${reason || 'no reason given'}${message ? `: ${message}` : ''}`;
  let hint =
    'Pods cannot get a network until the CNI plugin is set up: check the network daemonset pod on this node (kubectl -n kube-system get pods -o wide --field-selector spec.nodeName=' +
    s.nodeName +
    ').';
  if (s.cni.ok) {
    const c = s.cni.value;
    const usable = c.confFiles.filter((f) => f.error === null);
    if (!c.confDirExists) {
      detail += `; ${c.confDir} does not exist`;
      evidence.push({ source: 'file', path: c.confDir, excerpt: 'directory does not exist' });
    } else if (c.confFiles.length === 0) {
      detail += `; no network configuration in ${c.confDir}`;
      evidence.push({ source: 'file', path: c.confDir, excerpt: 'no *.conf, *.conflist or *.json files' });
      hint = `No CNI configuration in ${c.confDir}: the network plugin's daemonset has not written one yet (is its pod running on this node?). ${hint}`;
    } else {
      for (const f of c.confFiles.slice(0, 3)) evidence.push({ source: 'file', path: f.path, excerpt: clip(f.error ? `${f.error}: ${f.excerpt}` : f.excerpt) });
      if (usable.length === 0) {
        detail += `; no usable network configuration in ${c.confDir} (${c.confFiles.map((f) => `${f.name}: ${f.error}`).join('; ')})`;
        hint = `Fix or remove the broken files in ${c.confDir}. ${hint}`;
      }
    }
    evidence.push({
      source: 'file',
      path: c.binDir,
      excerpt: !c.binDirExists ? 'directory does not exist' : c.plugins.length === 0 ? 'no plugin binaries' : `plugins: ${c.plugins.join(', ')}`,
    });
    if (c.missingPlugins.length > 0) {
      detail += `; ${usable[0]?.name} uses ${c.missingPlugins.join(', ')}, missing from ${c.binDir}`;
      hint = `Install the missing CNI plugins (${c.missingPlugins.join(', ')}) into ${c.binDir} (usually the network daemonset's init container does). ${hint}`;
    } else if (usable.length > 0 && c.plugins.length > 0) {
      detail += `; ${usable[0]!.name} and its plugins are in place: the runtime may not have reloaded yet, or the plugin fails when it runs`;
      hint = `The configuration looks complete: read the runtime log for CNI errors (GET /v1/logs?query=containerd&pattern=cni). ${hint}`;
    }
  } else {
    evidence.push({ source: 'agent', excerpt: `CNI state unreadable: ${s.cni.error}` });
  }
  return { id: 'network-not-ready', severity: 'critical', title: 'Pod networking is not ready (NetworkReady=false)', detail, evidence, hint };
}
