/**
 * The node facts (GET /v1/node `facts`): conntrack table use, kernel taint,
 * D-state and zombie processes by pod, kubelet certificate expiry, kubelet's own
 * eviction thresholds (where they differ from the defaults the node rule checks),
 * mounts whose statfs does not return, and CRI list latency against PLEG's period.
 */
import type { NodeFacts } from '../../model/node.js';
import type { Evidence, Finding } from '../../model/triage.js';
import { humanSize, percent } from '../../format.js';
import { CONNTRACK_COUNT, CONNTRACK_MAX } from '../../readers/node/conntrack.js';
import { PLEG } from '../../readers/node/cri-latency.js';
import { troubleFlags } from '../../readers/node/taint.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS as T } from '../../rules/thresholds.js';
import { plural, type Rule, type SnapshotIndex, who } from './rule.js';

function conntrack(f: NodeFacts): Finding[] {
  const c = f.conntrack;
  if (!c.loaded || c.ratio === null || c.ratio < T.conntrackWarning) return [];
  return [
    {
      id: 'conntrack-table-full',
      severity: c.ratio >= T.conntrackCritical ? 'critical' : 'warning',
      title: `The connection tracking table is ${percent(c.ratio)} full`,
      detail: `${c.entries} of ${c.limit} entries${c.hostNetwork === false ? " (of the agent's own network namespace: run it with hostNetwork for the host's)" : ''}: when it is full the kernel drops new connections silently ("nf_conntrack: table full, dropping packet")`,
      evidence: [
        { source: 'proc', path: CONNTRACK_COUNT, excerpt: String(c.entries) },
        { source: 'proc', path: CONNTRACK_MAX, excerpt: String(c.limit) },
      ],
      hint: 'Raise net.netfilter.nf_conntrack_max (kube-proxy --conntrack-max-per-core) or find the pod opening connections without end (conntrack -L | awk ... | sort | uniq -c).',
    },
  ];
}

function taint(f: NodeFacts): Finding[] {
  const t = f.taint;
  if (!t) return [];
  const bad = troubleFlags(t);
  if (bad.length === 0) return [];
  return [
    {
      id: 'kernel-tainted',
      severity: 'warning',
      title: `The kernel is tainted: ${bad.map((b) => b.letter).join('')}`,
      detail: bad.map((b) => `${b.letter}: ${b.meaning}`).join('; '),
      evidence: [{ source: 'proc', path: '/proc/sys/kernel/tainted', excerpt: `${t.value} (${t.letters})` }],
      hint: 'A taint stays until reboot: read the kernel log for the oops, lockup or warning that set it (GET /v1/kernel?pattern=Tainted); plan to drain and reboot the node.',
    },
  ];
}

function processes(f: NodeFacts, ix: SnapshotIndex): Finding[] {
  const p = f.processes;
  const out: Finding[] = [];
  const sample = (state: 'D' | 'Z', podUid: string | null): Evidence[] =>
    p.samples
      .filter((x) => x.state === state && x.podUid === podUid)
      .slice(0, T.maxEvidence)
      .map((x) => ({ source: 'proc', path: `/proc/${x.pid}/stat`, excerpt: `${x.pid} (${x.comm}) ${x.state} ppid ${x.ppid}${x.wchan ? `; wchan ${x.wchan}` : ''}${x.cgroup ? `; cgroup ${x.cgroup}` : ''}` }));
  if (p.dState >= T.dStateProcesses) {
    const rows = p.byPod.filter((r) => r.state === 'D');
    const where = rows.slice(0, 5).map((r) => `${r.podUid ? who(ix.subject(r.podUid, r.containerId)) : 'host'}: ${r.count}`).join(', ');
    out.push({
      id: 'processes-d-state',
      severity: 'warning',
      title: `${plural(p.dState, 'process', 'processes')} in uninterruptible sleep (D state)`,
      detail: `${where}${p.cut ? ` (${p.cut})` : ''}: they wait on I/O that does not complete (a dead NFS server, a frozen filesystem, a failing disk) and cannot be killed`,
      evidence: p.samples.filter((x) => x.state === 'D').slice(0, T.maxEvidence).map((x) => ({ source: 'proc', path: `/proc/${x.pid}/wchan`, excerpt: `${x.pid} (${x.comm}) D; wchan ${x.wchan ?? '?'}; cgroup ${x.cgroup ?? '?'}` })),
      hint: 'wchan names what they wait in; /proc/pressure/io "full" and the kernel log ("blocked for more than") say whether I/O stalls; find the mount (cat /proc/<pid>/mountinfo) and its server or device.',
    });
  }
  for (const r of p.byPod) {
    if (r.state !== 'Z' || r.podUid === null || r.count < T.zombiesPerPod) continue;
    const subject = ix.subject(r.podUid, r.containerId);
    out.push({
      id: 'zombies-in-pod',
      severity: 'warning',
      title: `${who(subject)} holds ${r.count} zombie processes`,
      detail: `${r.count} exited processes nobody reaped: the container's PID 1 does not wait for its children; each holds a PID until it is reaped`,
      evidence: sample('Z', r.podUid),
      hint: 'Run an init as PID 1 (shareProcessNamespace, tini, dumb-init, or `docker run --init`), or fix the parent to wait(2) for its children.',
      subject,
    });
  }
  return out;
}

function certificates(f: NodeFacts): Finding[] {
  const out: Finding[] = [];
  for (const c of f.certificates) {
    if (c.secondsLeft === null) continue;
    const expired = c.secondsLeft < 0;
    if (!expired && c.secondsLeft > T.certExpiringDays * 86400) continue;
    out.push({
      id: expired ? 'kubelet-cert-expired' : 'kubelet-cert-expiring',
      severity: expired ? 'critical' : 'warning',
      title: expired ? `kubelet's ${c.role} certificate expired ${c.notAfter}` : `kubelet's ${c.role} certificate expires in ${Math.floor(c.secondsLeft / 3600)} h`,
      detail:
        c.role === 'client'
          ? `kubelet authenticates to the API server with it: ${expired ? 'the API server refuses kubelet (401), the node goes NotReady and its pods are evicted after the grace period; kubelet refuses logs, exec and port-forward, which it can no longer ask the API server to authorize' : 'rotation should have renewed it by now'}`
          : `kubelet serves its API with it (logs, exec, port-forward, metrics): ${expired ? 'whoever checks it fails with x509 errors (metrics-server, Prometheus, an API server with --kubelet-certificate-authority)' : 'whoever checks it will fail once it expires'}`,
      evidence: [{ source: 'file', path: c.path, excerpt: `${c.target ? `-> ${c.target}; ` : ''}subject ${c.subject}; issuer ${c.issuer}; notBefore ${c.notBefore}; notAfter ${c.notAfter}` }],
      hint:
        c.role === 'client'
          ? "Check rotateCertificates in kubelet's config and pending CSRs (kubectl get csr); kubeadm: follow its \"kubelet client certificate rotation fails\" steps or re-join the node; rke2, k3s: restart their agent service, which issues a new one; restart kubelet after the file is renewed. Meanwhile reach the agent on the node's address: a port-forward goes through kubelet."
          : 'Set serverTLSBootstrap and approve the serving CSRs, or replace kubelet.crt (delete it and restart kubelet to regenerate a self-signed one).',
    });
  }
  return out;
}

function eviction(f: NodeFacts): Finding[] {
  const out: Finding[] = [];
  const e = f.eviction;
  for (const c of e.checks) {
    const t = e.thresholds.find((x) => x.signal === c.signal && x.kind === c.kind);
    // kubelet's defaults are the node rule's (disk-pressure); here only what the operator set
    if (!t || t.from !== 'config' || !c.crossed) continue;
    const inodes = c.signal.endsWith('inodesFree');
    const fmt = (n: number) => (inodes ? `${n} inodes` : humanSize(n));
    out.push({
      id: 'eviction-threshold-crossed',
      severity: c.kind === 'hard' ? 'critical' : 'warning',
      title: `${c.signal} is below kubelet's configured ${c.kind} eviction threshold on ${c.path}`,
      detail: `${fmt(c.available)} available of ${fmt(c.capacity)}; kubelet's config says eviction${c.kind === 'hard' ? 'Hard' : 'Soft'} ${c.signal}<${t.value} (${fmt(c.threshold)}): ${c.kind === 'hard' ? 'kubelet evicts pods now' : 'kubelet evicts once the grace period passes'}`,
      evidence: [
        { source: 'file', path: e.configPath ?? 'kubelet --eviction-hard', excerpt: `eviction${c.kind === 'hard' ? 'Hard' : 'Soft'}: ${c.signal}: "${t.value}"` },
        { source: 'statfs', path: c.path, excerpt: `${inodes ? 'inodes free' : 'available'} ${c.available} of ${c.capacity}` },
      ],
      hint: 'These are kubelet\'s own thresholds, not the defaults: free space on that filesystem (images, logs, emptyDirs), or review the thresholds with the node\'s owner.',
    });
  }
  return out;
}

function mounts(f: NodeFacts, nowMs: number): Finding[] {
  // only a call of its own, out for a while, is a hung mount: a statfs queued behind a busy pool
  // (a loaded node, a capture) or refused a slot is no evidence about the mount
  return f.mounts.flatMap((m): Finding[] =>
    m.answered || !m.outstanding || nowMs - Date.parse(m.since) < T.mountHungSeconds * 1000
      ? []
      : [
          {
            id: 'mount-not-answering',
            severity: 'critical',
            title: `statfs of ${m.path} does not return`,
            detail: `${m.reason}; out since ${m.since}: anything that touches this mount (df, kubelet's stats, a container's writes) hangs in D state`,
            evidence: [{ source: 'statfs', path: m.path, excerpt: m.reason }],
            hint: 'Find the mount (findmnt -T <path>) and its server or device; a dead NFS server: restore it or `umount -f -l`; a frozen filesystem: `fsfreeze -u`.',
          },
        ],
  );
}

function criLatency(f: NodeFacts): Finding[] {
  const out: Finding[] = [];
  for (const m of f.criLatency.methods) {
    if (m.maxSeconds === null || m.maxSeconds < T.criSlowSeconds) continue;
    out.push({
      id: 'runtime-slow',
      severity: m.maxSeconds >= PLEG.unhealthySeconds ? 'critical' : 'warning',
      title: `${m.method} took up to ${m.maxSeconds.toFixed(2)} s`,
      detail: `${m.calls} calls in the last ${f.criLatency.windowSeconds} s, ${m.errors} failed; last ${m.lastSeconds} s (${m.lastCode}): kubelet's PLEG relists every ${PLEG.relistSeconds} s with these calls and reports itself unhealthy after ${PLEG.unhealthySeconds / 60} minutes without a relist`,
      evidence: [{ source: 'cri', path: m.method, excerpt: `max ${m.maxSeconds} s, median ${m.p50Seconds} s, last ${m.lastSeconds} s at ${m.lastAt}` }],
      hint: 'A slow runtime: too many containers, a disk that stalls (its state dir), or shims whose container is gone; check containerd\'s log and nodetruth_cri_call_duration_seconds.',
    });
  }
  return out;
}

export const nodeFactsRule: Rule = {
  name: 'node-facts',
  ids: idsOf('node-facts'),
  run(s, ix) {
    if (!s.facts?.ok) return [];
    const f = s.facts.value;
    return [...mounts(f, s.nowMs), ...certificates(f), ...conntrack(f), ...eviction(f), ...processes(f, ix), ...taint(f), ...criLatency(f)];
  },
};
