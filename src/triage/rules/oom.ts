/**
 * OOM kills: the kernel log's reports of the last hour (a global OOM is critical),
 * containerd's Error/137 race, and kills only a live cgroup's memory.events still counts.
 */
import type { CgroupRecord } from '../../model/cgroup.js';
import type { Evidence, Finding } from '../../model/triage.js';
import type { AttributedOomKill } from '../../view/oom.js';
import { clip, humanSize, shortId } from '../../format.js';
import { findingWindow } from '../../view/timeline/window.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { CG, plural, type Rule, who } from './rule.js';

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

export const oomRule: Rule = {
  name: 'oom',
  ids: idsOf('oom'),
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
      const limit = k.memcgLimitKb ? ` at its limit of ${humanSize(k.memcgLimitKb * 1024)}` : '';
      if (k.global) {
        out.push({
          id: 'oom-kill-node',
          severity: 'critical',
          title: 'The node ran out of memory: the kernel OOM killer ran',
          detail: `killed ${procs} at ${k.time}${k.podUid ? ` in ${who(subject)}` : ''} (not a cgroup limit: the whole node was out of memory)`,
          evidence,
          hint: 'Requests on this node do not cover what its pods use: compare `kubectl describe node` allocated requests with usage, and check for pods without memory limits (BestEffort/Burstable).',
          subject,
          ...findingWindow([k.time], s.nowMs),
        });
        continue;
      }
      out.push({
        id: 'oom-kill',
        severity: 'warning',
        title: `OOM kill in ${who(subject)}`,
        detail: `the kernel killed ${procs}${limit}, ${plural(g.length, 'time')} in the last ${THRESHOLDS.oomWindowMinutes} minutes, last at ${k.time}`,
        evidence,
        hint: `Raise the container's memory limit or reduce its use; the kernel report (GET /v1/oom) shows what it held.${k.containerId ? ` Its output before the kill: GET /v1/containers/${shortId(k.containerId)}/logs?previous=true.` : ''}`,
        subject,
        ...findingWindow(g.map((x) => x.time), s.nowMs),
      });
      // containerd's CRI reason for a main-process OOM kill is racy (Error or OOMKilled, exit 137); the kernel log is the witness
      const row = k.containerId ? ix.containersById.get(k.containerId) : undefined;
      if (row && row.state === 'CONTAINER_EXITED' && row.exitCode === 137 && row.reason !== 'OOMKilled') {
        out.push({
          id: 'oom-kill-misreported',
          severity: 'warning',
          title: `${who(subject)} was OOM-killed, but the runtime reports reason "${row.reason || '(none)'}" with exit code 137`,
          detail: `kubectl will show ${row.reason || 'no reason'} (exit 137) instead of OOMKilled: the kernel log shows the cgroup of container ${shortId(row.id)} hit its memory limit and its process ${k.process} (pid ${k.pid}) was killed at ${k.time}`,
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
        detail: `memory.events counts ${plural(n, 'OOM kill')} in this container's cgroup${running ? '; the container kept running, so a child process was killed (kubectl shows no restart)' : ''}${r.memory.max !== null && r.memory.max !== 'max' ? `; memory.max is ${humanSize(r.memory.max)}` : ''}`,
        evidence: [eventsEvidence(r), ...(row ? [{ source: 'cri', call: `ContainerStatus ${row.id}`, excerpt: `state ${row.state}, reason ${JSON.stringify(row.reason ?? '')}` }] : [])],
        hint: 'A process in this container was killed at its memory limit: raise the limit or reduce its use; GET /v1/oom lists the kernel reports still in the log.',
        subject,
      });
    }
    return out;
  },
};
