/** Pods with only NOTREADY sandboxes and nothing running (finished pods excepted). */
import type { Finding } from '../../model/triage.js';
import type { PodSandbox } from '../../model/runtime.js';
import type { ContainerRow } from '../../view/runtime-view.js';
import { secondsSince, shortId } from '../../format.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { plural, type Rule, who } from './rule.js';

export const sandboxRule: Rule = {
  name: 'sandboxes',
  ids: idsOf('sandboxes'),
  run(s, ix) {
    const out: Finding[] = [];
    for (const [uid, sandboxes] of ix.sandboxesByUid) {
      if (sandboxes.some((p) => p.state === 'SANDBOX_READY')) continue;
      const newest = sandboxes.reduce((a, b) => ((b.createdAt ?? '') > (a.createdAt ?? '') ? b : a));
      const age = secondsSince(newest.createdAt, s.nowMs);
      if (age !== null && age < THRESHOLDS.notReadySandboxSeconds) continue;
      const containers = ix.containers.filter((c) => c.podUid === uid || sandboxes.some((p) => p.id === c.podId));
      if (containers.some((c) => c.state === 'CONTAINER_RUNNING')) continue;
      if (finished(newest, containers)) continue;
      const latest = latestAttempts(containers);
      const subject = ix.subject(uid, null);
      out.push({
        id: 'sandbox-not-ready',
        severity: 'warning',
        title: `${who(subject)} has no ready sandbox and no running container`,
        detail: `${plural(sandboxes.length, 'sandbox', 'sandboxes')}, all NOTREADY; the newest (${shortId(newest.id)}, attempt ${newest.attempt}) was created ${age ?? '?'} s ago; ${containers.length === 0 ? 'no containers were created in it' : `containers: ${[...latest.values()].map((c) => `${c.name} ${c.state.replace('CONTAINER_', '').toLowerCase()}${c.exitCode !== null && c.state === 'CONTAINER_EXITED' ? ` (exit ${c.exitCode})` : ''}`).join(', ')}`}`,
        evidence: [
          { source: 'cri', call: 'ListPodSandbox', excerpt: sandboxes.map((p) => `${p.id} ${p.state} attempt ${p.attempt} created ${p.createdAt}`).join('\n') },
        ],
        hint: 'kubelet could not (re)create the pod sandbox: look for sandbox errors in the kubelet log (GET /v1/logs?query=kubelet.service&pattern=sandbox) — usually CNI (network setup) or the pause image.',
        subject,
      });
    }
    return out;
  },
};

/**
 * A finished pod: kubelet stops the sandbox of a pod that is not to run again (restartPolicy
 * Never, or OnFailure after its containers succeeded) once its containers have all exited, with
 * any exit code. The CRI carries no restartPolicy, so a finished pod is one whose newest sandbox
 * holds containers, the latest attempt of each EXITED: none is created, running or in an unknown
 * state, and no newer sandbox is being made (a recreation kubelet attempts is a newer sandbox,
 * with no containers while it fails). A pod kubelet restarts keeps its sandbox READY between
 * attempts, and is not judged here.
 */
function finished(newest: PodSandbox, containers: readonly ContainerRow[]): boolean {
  const latest = latestAttempts(containers.filter((c) => c.podId === newest.id));
  return latest.size > 0 && [...latest.values()].every((c) => c.state === 'CONTAINER_EXITED');
}

/** Each container name's latest attempt. */
function latestAttempts(containers: readonly ContainerRow[]): Map<string, ContainerRow> {
  const latest = new Map<string, ContainerRow>();
  for (const c of containers) {
    const seen = latest.get(c.name);
    if (!seen || c.attempt > seen.attempt) latest.set(c.name, c);
  }
  return latest;
}
