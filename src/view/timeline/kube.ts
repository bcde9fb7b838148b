/**
 * Kubernetes Events of this node and of the pods bound to it, as `kubectl describe` reads
 * them: one list of the Node's Events (involvedObject.kind=Node,involvedObject.name=<node>),
 * the pods bound to the node (spec.nodeName=<node>), then each pod's Events by its UID in its
 * namespace, a few in flight. Each Event is one event at its first occurrence and one more at
 * its last when it repeated (readers/kube/events.ts says which field gave each time).
 * Events of pods no longer bound to the node (deleted since) are not listed.
 */
import { mapLimit } from '../../lib/concurrency.js';
import type { Evidence } from '../../model/triage.js';
import type { TimelinePod } from '../../model/timeline.js';
import { loadKubeClient, precheckKubeAccess, type KubeAccess } from '../../readers/kube/api.js';
import { containerOfFieldPath, listEvents, type EventList, type KubeEvent } from '../../readers/kube/events.js';
import { formatMicros } from '../../readers/journal/time.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from '../../validate.js';
import { podMatches, SourceEvents, summaryText, excerptText, type TimelineQuery } from './window.js';

/** Pods whose Events are listed at most (kubelet's default is 110 pods a node). */
const KUBE_MAX_PODS = 256;
/** Events read at most over all lists (each list is bounded too): no more are listed once this many were. */
const KUBE_MAX_EVENTS = 20_000;
/** Event lists in flight at once. */
const IN_FLIGHT = 4;
const POD_UID = /^[0-9a-f-]{8,64}$/;

export interface KubeEventsDeps {
  kube: () => KubeAccess;
  config: { nodeName: string; kubeconfig: string | null };
}

/** No cluster access to read Events with: the reason, not a failure of the API server. */
export class KubeNotConfigured extends Error {
  override name = 'KubeNotConfigured';
}

/** `BackOff` → `event-back-off`; `OOMKilling` → `event-oom-killing`. */
export function eventKind(reason: string): string {
  const k = reason
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  return k ? `event-${k}` : 'event';
}

export async function kubeEvents(deps: KubeEventsDeps, q: TimelineQuery, signal: AbortSignal): Promise<{ events: SourceEvents; warnings: string[] }> {
  const { nodeName, kubeconfig } = deps.config;
  // the cheap check first: client-node is slow to load the first time and is not needed without access
  const pre = precheckKubeAccess({ kubeconfig });
  if (!pre.ok) throw new KubeNotConfigured(pre.reason);
  await loadKubeClient();
  const access = deps.kube();
  if (!access.ok) throw new KubeNotConfigured(access.reason);
  if (!DNS1123_SUBDOMAIN.test(nodeName)) throw new Error(`node name ${JSON.stringify(nodeName.slice(0, 64))} is not a DNS-1123 subdomain`);
  const api = access.api;
  const warnings: string[] = [];

  const [nodeList, pods] = await Promise.all([
    // a pod filter leaves the node's own Events out: they have no pod
    q.pods ? null : listEvents(api, null, `involvedObject.kind=Node,involvedObject.name=${nodeName}`, signal),
    api.podsOnNode(nodeName),
  ]);
  const mine = pods
    .map((p) => ({ namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' }))
    .filter((p) => DNS1123_LABEL.test(p.namespace) && POD_UID.test(p.uid) && (!q.pods || podMatches(q.pods, p)));
  if (mine.length > KUBE_MAX_PODS) warnings.push(`${mine.length} pods are bound to ${nodeName}: the Events of ${KUBE_MAX_PODS} of them were listed`);
  let read = nodeList?.events.length ?? 0;
  let unread = 0;
  const podLists = await mapLimit(mine.slice(0, KUBE_MAX_PODS), IN_FLIGHT, async (p) => {
    if (read >= KUBE_MAX_EVENTS) return (unread++, null);
    const list = await listEvents(api, p.namespace, `involvedObject.uid=${p.uid}`, signal);
    read += list.events.length;
    return { pod: p, list };
  });
  if (unread > 0) warnings.push(`${KUBE_MAX_EVENTS} Events were read: the Events of ${unread} more pods were not listed`);

  const out = new SourceEvents(q);
  let seq = 0;
  const seen = new Set<string>();
  const take = (list: EventList, pod: TimelinePod | null) => {
    if (list.cut) warnings.push(`${list.call}: more Events than one read takes; the rest were not read`);
    if (list.skipped.length > 0) warnings.push(`${list.skipped.length} items of ${list.call} were not Events that can be timed: ${list.skipped[0]}`);
    for (const e of list.events) {
      // the selector picked them; an answer that does not match it is not trusted either
      if (seen.has(e.uid) || (pod ? e.object.kind !== 'Pod' || e.object.uid !== pod.uid : e.object.kind !== 'Node' || e.object.name !== nodeName)) continue;
      seen.add(e.uid);
      addEvent(out, e, pod, () => seq++);
    }
  };
  if (nodeList) take(nodeList, null);
  for (const p of podLists) if (p) take(p.list, p.pod);
  return { events: out, warnings };
}

function addEvent(out: SourceEvents, e: KubeEvent, pod: TimelinePod | null, nextSeq: () => number): void {
  const container = containerOfFieldPath(e.object.fieldPath);
  const first = e.occurrences[0]!;
  const what = `${e.reporter || 'event'} ${e.reason || '(no reason)'}${pod ? '' : ` node/${e.object.name}`}: ${e.message}`;
  for (const o of e.occurrences) {
    const evidence: Evidence = {
      source: 'kube',
      call: `Event ${e.namespace}/${e.name} uid=${e.uid} resourceVersion=${e.resourceVersion}`,
      excerpt: excerptText(`${o.field}=${formatMicros(o.us)} (times: ${e.clock}) type=${e.type} reason=${e.reason} involvedObject=${e.object.kind}/${e.object.name}${e.object.fieldPath ? ` fieldPath=${e.object.fieldPath}` : ''}: ${e.message}`),
    };
    const again = o.repeats !== undefined ? ` (${o.repeats} times since ${formatMicros(first.us)})` : '';
    out.add(o.us, nextSeq(), () => ({
      source: 'kube',
      kind: eventKind(e.reason),
      severity: e.type === 'Warning' ? 'warning' : 'info',
      ...(pod ? { pod } : {}),
      ...(container ? { container: { name: container, id: null, attempt: null } } : {}),
      summary: summaryText(what + again),
      evidence: [evidence],
    }));
  }
}
