/**
 * The triage rules: pure functions from one snapshot to findings, each finding
 * carrying the evidence it came from (file path and content, CRI call, journal
 * cursor, kmsg sequence number) and the next step to take. Numbers and
 * patterns live in thresholds.ts.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { DiskUse } from '../model/node.js';
import type { PodSandbox } from '../model/runtime.js';
import type { Evidence, Finding, Severity, Subject } from '../model/triage.js';
import type { ContainerRow } from '../sources/cri/runtime-view.js';
import type { AttributedOomKill } from '../sources/oom/oom.js';
import type { Got, TriageSnapshot } from './snapshot.js';
import { KUBELET_JOURNAL_PATTERNS, matchesJournalPattern, THRESHOLDS } from './thresholds.js';

export interface Rule {
  /** finding ids this rule may emit */
  ids: readonly string[];
  run(s: TriageSnapshot, ix: SnapshotIndex): Finding[];
}

const CG = '/sys/fs/cgroup';
const clip = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n)}…` : s);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const bytes = (n: number) => {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toFixed(1))}${u[i]}`;
};
const short = (id: string) => id.slice(0, 13);
const secondsSince = (iso: string | null, nowMs: number) => (iso ? Math.round((nowMs - Date.parse(iso)) / 1000) : null);

/** Lookups shared by the rules, built once per snapshot. */
export class SnapshotIndex {
  readonly containers: ContainerRow[];
  readonly containersById = new Map<string, ContainerRow>();
  readonly sandboxesById = new Map<string, PodSandbox>();
  readonly sandboxesByUid = new Map<string, PodSandbox[]>();
  readonly cgroupsByContainer = new Map<string, CgroupRecord>();
  readonly podCgroups = new Map<string, CgroupRecord>();

  constructor(s: TriageSnapshot) {
    this.containers = s.containers.ok ? s.containers.value : [];
    for (const c of this.containers) this.containersById.set(c.id, c);
    for (const p of s.pods.ok ? s.pods.value : []) {
      this.sandboxesById.set(p.id, p);
      const l = this.sandboxesByUid.get(p.uid) ?? [];
      l.push(p);
      this.sandboxesByUid.set(p.uid, l);
    }
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
      if (r.containerId) this.cgroupsByContainer.set(r.containerId, r);
      else this.podCgroups.set(r.podUid, r);
    }
  }

  /** names for a pod UID and container id, from whatever the runtime said */
  subject(podUid: string | null, containerId: string | null): Subject {
    const c = containerId ? this.containersById.get(containerId) : undefined;
    const sb = containerId ? this.sandboxesById.get(containerId) : undefined;
    const pod = podUid ? this.sandboxesByUid.get(podUid)?.[0] : undefined;
    const cg = containerId ? this.cgroupsByContainer.get(containerId) : podUid ? this.podCgroups.get(podUid) : undefined;
    const out: Subject = {};
    const ns = c?.podNamespace || sb?.namespace || pod?.namespace || cg?.podNamespace;
    const name = c?.podName || sb?.name || pod?.name || cg?.podName;
    if (ns) out.namespace = ns;
    if (name) out.pod = name;
    if (podUid ?? c?.podUid) out.podUid = (podUid ?? c?.podUid)!;
    const cname = c?.name ?? (sb ? 'POD' : cg?.containerName);
    if (cname) out.container = cname;
    if (containerId) out.containerId = containerId;
    return out;
  }
}

export const who = (s: Subject): string => {
  const pod = s.pod ? `${s.namespace ? `${s.namespace}/` : ''}${s.pod}` : s.podUid ? `pod ${s.podUid}` : '';
  const c = s.container ? `container ${s.container}` : s.containerId ? `container ${short(s.containerId)}` : '';
  return [pod, c].filter(Boolean).join(' ') || 'the node';
};

// ---- runtime ------------------------------------------------------------------------

const runtimeRule: Rule = {
  ids: ['runtime-unreachable', 'runtime-not-answering', 'runtime-not-ready', 'network-not-ready'],
  run(s) {
    const endpoint = s.criEndpoint ?? '(none found)';
    if (!s.runtime.ok) {
      const timeout = s.runtime.status === 504;
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

// ---- kubelet ------------------------------------------------------------------------

const kubeletRule: Rule = {
  ids: ['kubelet-unhealthy'],
  run(s) {
    if (!s.host.ok) return [];
    const k = s.host.value.kubelet;
    if (k.ok) return [];
    const excerpt = k.reachable ? `HTTP ${k.status}: ${k.body}` : k.error;
    return [
      {
        id: 'kubelet-unhealthy',
        severity: 'critical',
        title: k.reachable ? "kubelet's health check fails" : "kubelet's health endpoint does not answer",
        detail: `${k.url}: ${excerpt}`,
        evidence: [{ source: 'http', call: `GET ${k.url}`, excerpt }],
        hint: 'kubelet is down or unhealthy: `systemctl status kubelet` and its log (GET /v1/logs?query=kubelet.service&tailLines=200); if kubelet listens elsewhere pass --kubelet-healthz.',
      },
    ];
  },
};

const journalRule: Rule = {
  ids: KUBELET_JOURNAL_PATTERNS.map((p) => p.id),
  run(s) {
    if (!s.kubeletJournal.ok) return [];
    const cutoffUs = (s.nowMs - THRESHOLDS.journalWindowMinutes * 60_000) * 1000;
    const out: Finding[] = [];
    const hits = new Map<string, { first: string; last: string; n: number; ev: Evidence[] }>();
    for (const r of s.kubeletJournal.value.records) {
      const sev = r.klogSeverity;
      if (sev === 'I' || (sev === null && (r.priority ?? 6) > 4)) continue;
      if (Date.parse(r.time) * 1000 < cutoffUs) continue;
      for (const p of KUBELET_JOURNAL_PATTERNS) {
        if (!matchesJournalPattern(p, r.message)) continue;
        const h = hits.get(p.id) ?? { first: r.time, last: r.time, n: 0, ev: [] };
        h.n++;
        h.last = r.time;
        if (h.ev.length < THRESHOLDS.maxEvidence) h.ev.push({ source: 'journal', cursor: r.cursor, excerpt: clip(`${r.time} ${r.message}`) });
        hits.set(p.id, h);
        break;
      }
    }
    for (const p of KUBELET_JOURNAL_PATTERNS) {
      const h = hits.get(p.id);
      if (!h) continue;
      out.push({
        id: p.id,
        severity: p.severity,
        title: p.title,
        detail: `${h.n} kubelet log line${h.n === 1 ? '' : 's'} in the last ${THRESHOLDS.journalWindowMinutes} minutes (${h.first} … ${h.last})`,
        evidence: h.ev,
        hint: p.hint,
      });
    }
    return out;
  },
};

// ---- OOM ----------------------------------------------------------------------------

function killEvidence(k: AttributedOomKill): Evidence {
  const e: Evidence = { source: k.evidence.source, excerpt: clip(k.evidence.lines.filter((l) => /^oom-kill:|Killed process|^memory: usage/.test(l)).join('\n') || k.evidence.lines.join('\n'), 800) };
  if (k.evidence.lastSeq !== null) e.seq = k.evidence.lastSeq;
  if (k.evidence.cursor) e.cursor = k.evidence.cursor;
  return e;
}

function eventsEvidence(r: CgroupRecord): Evidence {
  const ev = r.memory.events;
  return {
    source: 'cgroup',
    path: `${CG}${r.path}/memory.events`,
    excerpt: ev ? `max ${ev.max ?? '?'} oom ${ev.oom ?? '?'} oom_kill ${ev.oomKill ?? '?'}` : 'unreadable',
  };
}

const oomRule: Rule = {
  ids: ['oom-kill', 'oom-kill-node', 'oom-kill-misreported'],
  run(s, ix) {
    const out: Finding[] = [];
    const cutoff = s.nowMs - THRESHOLDS.oomWindowMinutes * 60_000;
    const kills = s.oom.ok ? s.oom.value.kills.filter((k) => k.time !== null && Date.parse(k.time) >= cutoff) : [];
    const groups = new Map<string, AttributedOomKill[]>();
    for (const k of kills) {
      const key = k.global ? `global/${k.pid}/${k.time}` : `${k.podUid ?? ''}/${k.containerId ?? k.taskMemcg ?? ''}`;
      groups.set(key, [...(groups.get(key) ?? []), k]);
    }
    const covered = new Set<string>();
    for (const g of groups.values()) {
      const k = g[g.length - 1]!;
      if (k.containerId) covered.add(k.containerId);
      const subject = ix.subject(k.podUid, k.containerId);
      const evidence = g.slice(-THRESHOLDS.maxEvidence).map(killEvidence);
      const podCg = k.podUid ? ix.podCgroups.get(k.podUid) : undefined;
      if (podCg) evidence.push(eventsEvidence(podCg));
      const procs = [...new Set(g.map((x) => `${x.process} (pid ${x.pid})`))].join(', ');
      const limit = k.memcgLimitKb ? ` at its limit of ${bytes(k.memcgLimitKb * 1024)}` : '';
      if (k.global) {
        out.push({
          id: 'oom-kill-node',
          severity: 'critical',
          title: 'The node ran out of memory: the kernel OOM killer ran',
          detail: `killed ${procs} at ${k.time}${k.podUid ? ` in ${who(subject)}` : ''} (not a cgroup limit: the whole node was out of memory)`,
          evidence,
          hint: 'Requests on this node do not cover what its pods use: compare `kubectl describe node` allocated requests with usage, and check for pods without memory limits (BestEffort/Burstable).',
          subject,
        });
        continue;
      }
      out.push({
        id: 'oom-kill',
        severity: 'warning',
        title: `OOM kill in ${who(subject)}`,
        detail: `the kernel killed ${procs}${limit}, ${g.length} time${g.length === 1 ? '' : 's'} in the last ${THRESHOLDS.oomWindowMinutes} minutes, last at ${k.time}`,
        evidence,
        hint: `Raise the container's memory limit or reduce its use; the kernel report (GET /v1/oom) shows what it held.${k.containerId ? ` Its output before the kill: GET /v1/containers/${short(k.containerId)}/logs?previous=true.` : ''}`,
        subject,
      });
      // containerd's race (NOTES.md): the main process was OOM-killed, the CRI says Error/137
      const row = k.containerId ? ix.containersById.get(k.containerId) : undefined;
      if (row && row.state === 'CONTAINER_EXITED' && row.exitCode === 137 && row.reason !== 'OOMKilled') {
        out.push({
          id: 'oom-kill-misreported',
          severity: 'warning',
          title: `${who(subject)} was OOM-killed, but the runtime reports reason "${row.reason || '(none)'}" with exit code 137`,
          detail: `kubectl will show ${row.reason || 'no reason'} (exit 137) instead of OOMKilled: the kernel log shows the cgroup of container ${short(row.id)} hit its memory limit and its process ${k.process} (pid ${k.pid}) was killed at ${k.time}`,
          evidence: [
            { source: 'cri', call: `ContainerStatus ${row.id}`, excerpt: `state ${row.state}, exitCode ${row.exitCode}, reason ${JSON.stringify(row.reason ?? '')}, finishedAt ${row.finishedAt}` },
            killEvidence(k),
          ],
          hint: "Treat it as an OOM kill (containerd records the reason racily when the main process is killed). Raise the memory limit; don't chase an application error.",
          subject,
        });
      }
    }
    // OOM kills only memory.events still shows: a running container whose child was killed, or a kill the kernel log no longer holds
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
      if (r.kind !== 'container' || !r.containerId || covered.has(r.containerId)) continue;
      const n = r.memory.events?.oomKill ?? 0;
      if (n <= 0) continue;
      const subject = ix.subject(r.podUid, r.containerId);
      const row = ix.containersById.get(r.containerId);
      const running = row?.state === 'CONTAINER_RUNNING';
      out.push({
        id: 'oom-kill',
        severity: 'warning',
        title: `OOM kill in ${who(subject)}`,
        detail: `memory.events counts ${n} OOM kill${n === 1 ? '' : 's'} in this container's cgroup${running ? '; the container kept running, so a child process was killed (kubectl shows no restart)' : ''}${r.memory.max !== null && r.memory.max !== 'max' ? `; memory.max is ${bytes(r.memory.max)}` : ''}`,
        evidence: [eventsEvidence(r), ...(row ? [{ source: 'cri', call: `ContainerStatus ${row.id}`, excerpt: `state ${row.state}, reason ${JSON.stringify(row.reason ?? '')}` }] : [])],
        hint: 'A process in this container was killed at its memory limit: raise the limit or reduce its use; GET /v1/oom lists the kernel reports still in the log.',
        subject,
      });
    }
    return out;
  },
};

// ---- pods and containers -------------------------------------------------------------

const crashLoopRule: Rule = {
  ids: ['crash-loop'],
  run(s, ix) {
    const byName = new Map<string, ContainerRow[]>();
    for (const c of ix.containers) {
      const k = `${c.podUid || c.podId}/${c.name}`;
      byName.set(k, [...(byName.get(k) ?? []), c]);
    }
    const out: Finding[] = [];
    for (const rows of byName.values()) {
      const newest = rows.reduce((a, b) => (b.attempt > a.attempt ? b : a));
      const exited = rows.filter((r) => r.state === 'CONTAINER_EXITED');
      if (exited.length === 0) continue;
      const last = exited.reduce((a, b) => (b.attempt > a.attempt ? b : a));
      if (newest.attempt < THRESHOLDS.crashLoopAttempt || last.exitCode === 0 || last.exitCode === null) continue;
      const subject = ix.subject(newest.podUid || null, newest.id);
      out.push({
        id: 'crash-loop',
        severity: 'warning',
        title: `${who(subject)} is crash-looping`,
        detail: `attempt ${newest.attempt} (${newest.state.replace('CONTAINER_', '').toLowerCase()}); its last run (attempt ${last.attempt}) exited with code ${last.exitCode}${last.reason ? ` (${last.reason})` : ''} at ${last.finishedAt ?? 'an unknown time'}`,
        evidence: [
          {
            source: 'cri',
            call: `ContainerStatus ${last.id}`,
            excerpt: `attempt ${last.attempt}, state ${last.state}, exitCode ${last.exitCode}, reason ${JSON.stringify(last.reason ?? '')}, startedAt ${last.startedAt}, finishedAt ${last.finishedAt}`,
          },
          ...(newest.id !== last.id ? [{ source: 'cri', call: `ListContainers`, excerpt: `newest attempt ${newest.attempt}: ${newest.id} ${newest.state}` }] : []),
        ],
        hint: `Read the last run's output: GET /v1/containers/${short(last.id)}/logs?tailLines=100${last.exitCode === 137 ? ' (exit 137: killed by SIGKILL, often an OOM kill or a failed liveness probe)' : ''}.`,
        subject,
      });
    }
    return out;
  },
};

const sandboxRule: Rule = {
  ids: ['sandbox-not-ready', 'container-stuck-created'],
  run(s, ix) {
    const out: Finding[] = [];
    for (const [uid, sandboxes] of ix.sandboxesByUid) {
      if (sandboxes.some((p) => p.state === 'SANDBOX_READY')) continue;
      const newest = sandboxes.reduce((a, b) => ((b.createdAt ?? '') > (a.createdAt ?? '') ? b : a));
      const age = secondsSince(newest.createdAt, s.nowMs);
      if (age !== null && age < THRESHOLDS.notReadySandboxSeconds) continue;
      const containers = ix.containers.filter((c) => c.podUid === uid || sandboxes.some((p) => p.id === c.podId));
      if (containers.some((c) => c.state === 'CONTAINER_RUNNING')) continue;
      // a pod that ran to completion: kubelet stops its sandbox once every container exited 0
      const latest = new Map<string, ContainerRow>();
      for (const c of containers) if (!latest.has(c.name) || c.attempt > latest.get(c.name)!.attempt) latest.set(c.name, c);
      if (latest.size > 0 && [...latest.values()].every((c) => c.state === 'CONTAINER_EXITED' && c.exitCode === 0)) continue;
      const subject = ix.subject(uid, null);
      out.push({
        id: 'sandbox-not-ready',
        severity: 'warning',
        title: `${who(subject)} has no ready sandbox and no running container`,
        detail: `${sandboxes.length} sandbox${sandboxes.length === 1 ? '' : 'es'}, all NOTREADY; the newest (${short(newest.id)}, attempt ${newest.attempt}) was created ${age ?? '?'} s ago; ${containers.length === 0 ? 'no containers were created in it' : `containers: ${[...latest.values()].map((c) => `${c.name} ${c.state.replace('CONTAINER_', '').toLowerCase()}${c.exitCode !== null && c.state === 'CONTAINER_EXITED' ? ` (exit ${c.exitCode})` : ''}`).join(', ')}`}`,
        evidence: [
          { source: 'cri', call: 'ListPodSandbox', excerpt: sandboxes.map((p) => `${p.id} ${p.state} attempt ${p.attempt} created ${p.createdAt}`).join('\n') },
        ],
        hint: 'kubelet could not (re)create the pod sandbox: look for sandbox errors in the kubelet log (GET /v1/logs?query=kubelet.service&pattern=sandbox) — usually CNI (network setup) or the pause image.',
        subject,
      });
    }
    for (const c of ix.containers) {
      if (c.state !== 'CONTAINER_CREATED') continue;
      const age = secondsSince(c.createdAt, s.nowMs);
      if (age === null || age < THRESHOLDS.createdStuckSeconds) continue;
      const subject = ix.subject(c.podUid || null, c.id);
      out.push({
        id: 'container-stuck-created',
        severity: 'warning',
        title: `${who(subject)} was created ${age} s ago and never started`,
        detail: `container ${short(c.id)} (attempt ${c.attempt}, image ${c.image}) is still CREATED`,
        evidence: [{ source: 'cri', call: `ContainerStatus ${c.id}`, excerpt: `state ${c.state}, createdAt ${c.createdAt}, startedAt ${c.startedAt ?? ''}, reason ${JSON.stringify(c.reason ?? '')}` }],
        hint: 'StartContainer failed or hangs: read the runtime log for this id (GET /v1/logs?query=containerd&pattern=' + short(c.id) + ') — often a volume mount, a missing device, or a runtime (runc) error.',
        subject,
      });
    }
    return out;
  },
};

// ---- cgroups ------------------------------------------------------------------------

const throttlingRule: Rule = {
  ids: ['cpu-throttling'],
  run(s, ix) {
    if (!s.throttling.ok) return [];
    const w = s.throttling.value.windowMs;
    return s.throttling.value.entries
      .filter((e) => e.throttledShare !== null && e.throttledShare > THRESHOLDS.throttledShare)
      .map((e): Finding => {
        const subject = ix.subject(e.podUid, e.containerId);
        const quota = e.cpuMax && e.cpuMax.quotaCores !== 'max' ? `${e.cpuMax.quotaCores} cores (cpu.max ${e.cpuMax.quotaUsec} ${e.cpuMax.periodUsec})` : 'no quota';
        return {
          id: 'cpu-throttling',
          severity: 'warning',
          title: `${who(subject)} is CPU-throttled in ${pct(e.throttledShare!)} of periods`,
          detail: `over ${(w / 1000).toFixed(1)} s: ${e.throttledPeriods} of ${e.periods} CFS periods throttled, ${e.throttledSeconds} s throttled, using ${e.usageCores} cores against a quota of ${quota}`,
          evidence: [
            {
              source: 'cgroup',
              path: `${CG}${e.path}/cpu.stat`,
              excerpt: `nr_periods +${e.periods} nr_throttled +${e.throttledPeriods} throttled_usec +${Math.round(e.throttledSeconds * 1e6)} over ${w} ms`,
            },
            ...(e.cpuMax ? [{ source: 'cgroup', path: `${CG}${e.path}/cpu.max`, excerpt: `${e.cpuMax.quotaUsec} ${e.cpuMax.periodUsec}` }] : []),
          ],
          hint: `The container wants more CPU than its limit: raise (or remove) its CPU limit; latency suffers at every throttled period. GET /v1/throttling?window=10s measures again.`,
          subject,
        };
      });
  },
};

const memoryRule: Rule = {
  ids: ['memory-near-limit'],
  run(s, ix) {
    const out: Finding[] = [];
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
      if (r.kind !== 'container' || r.sandbox) continue;
      const max = r.memory.max;
      const ws = r.memory.workingSet;
      if (max === null || max === 'max' || max <= 0 || ws === null) continue;
      const ratio = ws / max;
      if (ratio <= THRESHOLDS.memoryNearLimit) continue;
      const subject = ix.subject(r.podUid, r.containerId);
      out.push({
        id: 'memory-near-limit',
        severity: 'warning',
        title: `${who(subject)} uses ${pct(ratio)} of its memory limit`,
        detail: `working set ${bytes(ws)} of memory.max ${bytes(max)} (memory.current ${r.memory.current === null ? '?' : bytes(r.memory.current)}, inactive_file ${r.memory.inactiveFile === null ? '?' : bytes(r.memory.inactiveFile)}): an OOM kill is near`,
        evidence: [
          { source: 'cgroup', path: `${CG}${r.path}/memory.current`, excerpt: String(r.memory.current) },
          { source: 'cgroup', path: `${CG}${r.path}/memory.max`, excerpt: String(max) },
          { source: 'cgroup', path: `${CG}${r.path}/memory.stat`, excerpt: `inactive_file ${r.memory.inactiveFile}` },
        ],
        hint: `Raise the memory limit or find what grows: GET /v1/containers/${short(r.containerId!)}/processes lists RSS per process.`,
        subject,
      });
    }
    return out;
  },
};

// ---- node ---------------------------------------------------------------------------

function diskSignal(d: DiskUse | undefined, fsName: 'nodefs' | 'imagefs', dedupe: Set<string>): Finding[] {
  if (!d || !d.present) return [];
  const out: Finding[] = [];
  const avail = fsName === 'nodefs' ? THRESHOLDS.nodefsAvailable : THRESHOLDS.imagefsAvailable;
  const inodes = fsName === 'nodefs' ? THRESHOLDS.nodefsInodesFree : THRESHOLDS.imagefsInodesFree;
  const check = (signal: string, value: number | null, threshold: number, text: string) => {
    if (value === null) return;
    const sev: Severity | null = value < threshold ? 'critical' : value < threshold + THRESHOLDS.diskWarningMargin ? 'warning' : null;
    if (!sev) return;
    const key = `${d.totalBytes}/${d.inodesTotal}/${signal.split('.')[1]}`;
    if (dedupe.has(key)) return; // nodefs and imagefs on one filesystem: say it once
    dedupe.add(key);
    out.push({
      id: 'disk-pressure',
      severity: sev,
      title: sev === 'critical' ? `${signal} below kubelet's eviction threshold on ${d.path}` : `${signal} close to kubelet's eviction threshold on ${d.path}`,
      detail: `${text} (kubelet evicts pods below ${pct(threshold)}: ${signal}<${Math.round(threshold * 100)}%)`,
      evidence: [
        {
          source: 'statfs',
          path: d.path,
          excerpt: `size ${bytes(d.totalBytes ?? 0)}, available ${bytes(d.availableBytes ?? 0)} (${pct(d.availableRatio ?? 0)}); inodes ${d.inodesTotal}, free ${d.inodesFree} (${pct(d.inodesFreeRatio ?? 0)})`,
        },
      ],
      hint:
        fsName === 'imagefs'
          ? 'Free image space: unused images (crictl rmi --prune, or let kubelet image GC run), and large container writable layers.'
          : 'Free space under /var/lib/kubelet and /var/log: large emptyDir volumes, container logs (/var/log/pods), the journal (journalctl --vacuum-size).',
    });
  };
  check(`${fsName}.available`, d.availableRatio, avail, `${pct(d.availableRatio ?? 0)} available (${bytes(d.availableBytes ?? 0)} of ${bytes(d.totalBytes ?? 0)})`);
  check(`${fsName}.inodesFree`, d.inodesFreeRatio, inodes, `${pct(d.inodesFreeRatio ?? 0)} of inodes free (${d.inodesFree} of ${d.inodesTotal})`);
  return out;
}

const nodeRule: Rule = {
  ids: ['disk-pressure', 'pid-pressure', 'memory-pressure'],
  run(s) {
    if (!s.host.ok) return [];
    const h = s.host.value;
    const disk = (p: string) => h.disks.find((d) => d.path === p && d.present);
    const dedupe = new Set<string>();
    const out: Finding[] = [
      ...diskSignal(disk('/var/lib/kubelet') ?? disk('/'), 'nodefs', dedupe),
      ...diskSignal(disk('/var/lib/containerd') ?? disk('/'), 'imagefs', dedupe),
    ];
    const r = h.pids.pidRatio;
    if (r !== null && r >= THRESHOLDS.pidUseWarning) {
      out.push({
        id: 'pid-pressure',
        severity: r >= THRESHOLDS.pidUseCritical ? 'critical' : 'warning',
        title: `${pct(r)} of the node's PIDs are in use`,
        detail: `${h.pids.threads} threads (${h.pids.processes} processes) against kernel.pid_max ${h.pids.pidMax}: new processes and threads will fail with EAGAIN`,
        evidence: [
          { source: 'proc', path: '/proc/loadavg', excerpt: `${h.pids.threads} threads` },
          { source: 'proc', path: '/proc/sys/kernel/pid_max', excerpt: String(h.pids.pidMax) },
        ],
        hint: 'Find the pod that forks without bound (GET /v1/cgroups lists pids.current per cgroup) and set pod PID limits (kubelet --pod-max-pids).',
      });
    }
    const avail = h.memory.availableBytes;
    if (avail !== null && avail < THRESHOLDS.memoryAvailableBytes) {
      out.push({
        id: 'memory-pressure',
        severity: 'critical',
        title: 'The node is below kubelet\'s memory eviction threshold',
        detail: `MemAvailable ${bytes(avail)} of ${bytes(h.memory.totalBytes ?? 0)} (kubelet evicts pods below memory.available<100Mi)`,
        evidence: [{ source: 'proc', path: '/proc/meminfo', excerpt: `MemTotal ${h.memory.totalBytes} MemAvailable ${avail}` }],
        hint: 'Pods will be evicted (BestEffort first); find the biggest users with GET /v1/cgroups?sort=memory.',
      });
    }
    return out;
  },
};

// ---- sources that did not answer ------------------------------------------------------

const SOURCE_SEVERITY: Record<string, Severity> = {
  cgroups: 'warning',
  throttling: 'info',
  host: 'warning',
  cni: 'info',
  oom: 'info',
  kubeletJournal: 'info',
  pods: 'warning',
  containers: 'warning',
};
const SOURCE_NAMES: Record<string, string> = {
  cgroups: 'cgroups',
  throttling: 'CPU throttling measurement',
  host: 'node health (/proc, statfs, kubelet healthz)',
  cni: 'CNI configuration',
  oom: 'kernel log (OOM kills)',
  kubeletJournal: 'kubelet journal',
  pods: 'runtime pod sandboxes',
  containers: 'runtime containers',
};

const sourcesRule: Rule = {
  ids: ['source-unavailable'],
  run(s) {
    const out: Finding[] = [];
    for (const key of Object.keys(SOURCE_NAMES)) {
      const g = (s as unknown as Record<string, Got<unknown>>)[key]!;
      if (g.ok) continue;
      // the runtime's own finding already says it; cgroups and throttling failing alike is one finding
      if ((key === 'pods' || key === 'containers') && !s.runtime.ok) continue;
      if (key === 'throttling' && !s.cgroups.ok) continue;
      out.push({
        id: 'source-unavailable',
        severity: SOURCE_SEVERITY[key]!,
        title: `Could not read the ${SOURCE_NAMES[key]}`,
        detail: g.error,
        evidence: [{ source: 'agent', excerpt: g.error }],
        hint: 'The rules that need this source did not run; the rest of the report stands. Check --host-root and the agent\'s privileges (see /readyz).',
      });
    }
    return out;
  },
};

/** The rule table, in report order. */
export const RULES: readonly Rule[] = [runtimeRule, kubeletRule, journalRule, oomRule, crashLoopRule, sandboxRule, throttlingRule, memoryRule, nodeRule, sourcesRule];

export function runRules(s: TriageSnapshot, rules: readonly Rule[] = RULES): Finding[] {
  const ix = new SnapshotIndex(s);
  return rules.flatMap((r) => r.run(s, ix));
}
