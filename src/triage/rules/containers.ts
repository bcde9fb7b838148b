/** Containers: crash loops, and containers created but never started. */
import type { Finding } from '../../model/triage.js';
import type { ContainerRow } from '../../view/runtime-view.js';
import { secondsSince, shortId } from '../../format.js';
import { findingWindow } from '../../view/timeline/window.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { type Rule, who } from './rule.js';

export const crashLoopRule: Rule = {
  name: 'crash-loop',
  ids: idsOf('crash-loop'),
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
        hint: `Read the last run's output: GET /v1/containers/${shortId(last.id)}/logs?tailLines=100${last.exitCode === 137 ? ' (exit 137: killed by SIGKILL, often an OOM kill or a failed liveness probe)' : ''}.`,
        subject,
        // from the oldest attempt the runtime still lists to the last run's end
        ...findingWindow([rows.reduce((a, b) => (b.attempt < a.attempt ? b : a)).createdAt, last.finishedAt], s.nowMs),
      });
    }
    return out;
  },
};

// after the sandbox rule in RULES: a pod's own finding comes before its containers'
export const stuckCreatedRule: Rule = {
  name: 'stuck-created',
  ids: idsOf('stuck-created'),
  run(s, ix) {
    const out: Finding[] = [];
    for (const c of ix.containers) {
      if (c.state !== 'CONTAINER_CREATED') continue;
      const age = secondsSince(c.createdAt, s.nowMs);
      if (age === null || age < THRESHOLDS.createdStuckSeconds) continue;
      const subject = ix.subject(c.podUid || null, c.id);
      out.push({
        id: 'container-stuck-created',
        severity: 'warning',
        title: `${who(subject)} was created ${age} s ago and never started`,
        detail: `container ${shortId(c.id)} (attempt ${c.attempt}, image ${c.image}) is still CREATED`,
        evidence: [{ source: 'cri', call: `ContainerStatus ${c.id}`, excerpt: `state ${c.state}, createdAt ${c.createdAt}, startedAt ${c.startedAt ?? ''}, reason ${JSON.stringify(c.reason ?? '')}` }],
        hint: 'StartContainer failed or hangs: read the runtime log for this id (GET /v1/logs?query=containerd&pattern=' + shortId(c.id) + ') — often a volume mount, a missing device, or a runtime (runc) error.',
        subject,
      });
    }
    return out;
  },
};

