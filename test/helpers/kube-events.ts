/**
 * Kubernetes Events as the API server returns them in a core/v1 EventList (items carry no
 * kind/apiVersion), in the two shapes recorders write (k8s.io/api core/v1 Event):
 *
 * - legacyEvent: client-go's record.EventRecorder (kubelet, node-controller): `source`,
 *   `firstTimestamp`/`lastTimestamp` in whole seconds, repeats in `count`, `eventTime: null`;
 * - seriesEvent: the events.k8s.io/v1 recorder (scheduler, newer controllers) as core/v1 shows
 *   it: `eventTime` a MicroTime (six fractional digits), repeats in `series`, `source: {}`,
 *   `firstTimestamp`/`lastTimestamp` null, `reportingComponent`/`reportingInstance`, `action`.
 */
import { randomUUID } from 'node:crypto';

export interface Ref {
  kind: 'Pod' | 'Node';
  name: string;
  namespace?: string;
  uid: string;
  fieldPath?: string;
}

/** metav1.Time: RFC 3339, whole seconds */
export const kubeTime = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
/** metav1.MicroTime: RFC 3339 with six fractional digits, from µs */
export const microTime = (us: number): string => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 19)}.${String(us % 1_000_000).padStart(6, '0')}Z`;

let rv = 48_000;
const involved = (r: Ref) => ({
  kind: r.kind,
  ...(r.kind === 'Pod' ? { namespace: r.namespace ?? 'default' } : {}),
  name: r.name,
  uid: r.uid,
  apiVersion: 'v1',
  ...(r.kind === 'Pod' ? { resourceVersion: '47980' } : {}),
  ...(r.fieldPath ? { fieldPath: r.fieldPath } : {}),
});
const meta = (r: Ref, createdMs: number, uid?: string) => ({
  name: `${r.name}.${(0x187c4a3b2e1f0000 + rv).toString(16).slice(0, 16)}`,
  namespace: r.kind === 'Pod' ? (r.namespace ?? 'default') : 'default',
  uid: uid ?? randomUUID(),
  resourceVersion: String(rv++),
  creationTimestamp: kubeTime(createdMs),
});

export function legacyEvent(o: { ref: Ref; reason: string; message: string; type?: 'Normal' | 'Warning'; component?: string; host?: string; firstMs: number; lastMs?: number; count?: number; uid?: string }): Record<string, unknown> {
  const component = o.component ?? 'kubelet';
  return {
    metadata: meta(o.ref, o.firstMs, o.uid),
    involvedObject: involved(o.ref),
    reason: o.reason,
    message: o.message,
    source: { component, ...(o.host ? { host: o.host } : {}) },
    firstTimestamp: kubeTime(o.firstMs),
    lastTimestamp: kubeTime(o.lastMs ?? o.firstMs),
    count: o.count ?? 1,
    type: o.type ?? 'Normal',
    eventTime: null,
    reportingComponent: component,
    reportingInstance: o.host ?? '',
  };
}

export function seriesEvent(o: { ref: Ref; reason: string; message: string; type?: 'Normal' | 'Warning'; controller: string; instance: string; action: string; eventUs: number; series?: { count: number; lastUs: number }; uid?: string }): Record<string, unknown> {
  return {
    metadata: meta(o.ref, Math.floor(o.eventUs / 1000), o.uid),
    involvedObject: involved(o.ref),
    reason: o.reason,
    message: o.message,
    source: {},
    firstTimestamp: null,
    lastTimestamp: null,
    type: o.type ?? 'Normal',
    eventTime: microTime(o.eventUs),
    ...(o.series ? { series: { count: o.series.count, lastObservedTime: microTime(o.series.lastUs) } } : {}),
    action: o.action,
    reportingComponent: o.controller,
    reportingInstance: o.instance,
  };
}
