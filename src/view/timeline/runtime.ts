/**
 * Runtime events from the CRI's own timestamps: each container attempt's created, started and
 * exited times (ContainerStatus), each sandbox's creation (ListPodSandbox) with its state now.
 */
import type { Evidence, Severity } from '../../model/triage.js';
import type { PodSandbox } from '../../model/runtime.js';
import { parseRfc3339Micros } from '../../readers/journal/time.js';
import type { ContainerRow } from '../runtime-view.js';
import { SourceEvents, summaryText, type TimelineQuery } from './window.js';
import { stateWord } from '../../format.js';

const usOf = (t: string | null): number | null => (t ? parseRfc3339Micros(t) : null);

function exitSeverity(r: ContainerRow): Severity {
  if (r.reason === 'OOMKilled') return 'critical';
  return r.exitCode === 0 ? 'info' : 'warning';
}

/** The runtime's events over its rows and sandboxes. */
export function runtimeEvents(rows: readonly ContainerRow[], sandboxes: readonly PodSandbox[], q: TimelineQuery): SourceEvents {
  const out = new SourceEvents(q);
  let seq = 0;
  for (const s of sandboxes) {
    const pod = { namespace: s.namespace, name: s.name, uid: s.uid };
    const evidence: Evidence[] = [{ source: 'cri', call: `ListPodSandbox ${s.id}`, excerpt: `state=${s.state} createdAt=${s.createdAt ?? ''} attempt=${s.attempt}` }];
    out.add(usOf(s.createdAt), seq++, () => ({
      source: 'runtime',
      kind: 'sandbox-created',
      severity: 'info',
      pod,
      summary: summaryText(`sandbox ${s.id.slice(0, 13)} created (attempt ${s.attempt}), ${stateWord(s.state)} now`),
      evidence,
    }));
  }
  for (const r of rows) {
    const pod = { namespace: r.podNamespace || null, name: r.podName || null, uid: r.podUid || null };
    const container = { name: r.name, id: r.id, attempt: r.attempt };
    const call = `ContainerStatus ${r.id}`;
    const base = { source: 'runtime' as const, pod, container };
    out.add(usOf(r.createdAt), seq++, () => ({
      ...base,
      kind: 'container-created',
      severity: 'info',
      summary: summaryText(`${r.name} attempt ${r.attempt} created (${r.image})`),
      evidence: [{ source: 'cri', call: `ListContainers ${r.id}`, excerpt: `createdAt=${r.createdAt}` }],
    }));
    // The runtime stamps startedAt when its start call returns: a process that exits at
    // once has a finishedAt before it. A start comes before its exit, so it is placed at
    // the exit (ties keep insertion order) and its evidence keeps the recorded stamp.
    const startedUs = usOf(r.startedAt);
    const finishedUs = usOf(r.finishedAt);
    const startAfterExit = startedUs !== null && finishedUs !== null && finishedUs < startedUs;
    out.add(startAfterExit ? finishedUs : startedUs, seq++, () => ({
      ...base,
      kind: 'container-started',
      severity: 'info',
      summary: summaryText(`${r.name} attempt ${r.attempt} started${startAfterExit ? ' (the runtime stamped its start after its exit)' : ''}`),
      evidence: [{ source: 'cri', call, excerpt: `startedAt=${r.startedAt}` }],
    }));
    // an exited container's finishedAt; a running one has none (the CRI's zero time is null here)
    if (r.state === 'CONTAINER_EXITED' || r.finishedAt) {
      out.add(usOf(r.finishedAt), seq++, () => ({
        ...base,
        kind: 'container-exited',
        severity: exitSeverity(r),
        summary: summaryText(`${r.name} attempt ${r.attempt} exited with code ${r.exitCode ?? '?'}${r.reason ? ` (${r.reason})` : ''}`),
        evidence: [{ source: 'cri', call, excerpt: `finishedAt=${r.finishedAt} exitCode=${r.exitCode ?? ''} reason=${r.reason ?? ''}` }],
      }));
    }
  }
  return out;
}
