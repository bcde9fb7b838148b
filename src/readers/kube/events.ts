/**
 * Kubernetes Events (core/v1, as `kubectl describe` reads them): the pure parser of an Event
 * into the times it happened, and the bounded lists of the Events of one object.
 *
 * An Event is a compacted record: the legacy recorder (kubelet) counts repeats in `count`
 * between `firstTimestamp` and `lastTimestamp`; the events.k8s.io recorder (scheduler,
 * controllers) stamps `eventTime` (µs) and counts repeats in `series.count` up to
 * `series.lastObservedTime`. The times between the first and the last are not kept by the
 * API server, so an Event gives at most two occurrences: its first and its last, each with
 * the field it was read from.
 */
import { parseRfc3339Micros } from '../journal/time.js';
import { SourceError } from '../errors.js';
import { getJson } from './get.js';
import type { KubeApi } from './api.js';

/** Text fields are cut to this many characters (an Event's note is at most 1 kB by the API's own rule; core/v1 does not enforce it). */
const TEXT_CHARS = 4096;
const NAME_CHARS = 253;

interface KubeObjectRef {
  kind: string;
  namespace: string | null;
  name: string;
  uid: string | null;
  /** spec.containers{name} when the Event is about one container */
  fieldPath: string | null;
}

interface KubeEventOccurrence {
  /** µs since the epoch */
  us: number;
  /** the field the time was read from: firstTimestamp, lastTimestamp, eventTime, series.lastObservedTime, metadata.creationTimestamp */
  field: string;
  /** the last of several: how many times it happened from the first to this one */
  repeats?: number;
}

export interface KubeEvent {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** Normal or Warning (others may come) */
  type: string;
  reason: string;
  message: string;
  object: KubeObjectRef;
  /** source.component, reportingComponent or reportingController */
  reporter: string;
  /** source.host or reportingInstance */
  host: string | null;
  /** oldest first: the first occurrence, and the last when it happened more than once later */
  occurrences: KubeEventOccurrence[];
  /** how the times were chosen, for the evidence */
  clock: string;
}

const str = (v: unknown, max = TEXT_CHARS): string | null => (typeof v === 'string' && v.length > 0 ? v.slice(0, max) : null);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 1);
const time = (v: unknown): number | null => (typeof v === 'string' && v.length <= 64 ? parseRfc3339Micros(v) : null);

/**
 * One Event, from its JSON (core/v1, or events.k8s.io/v1's names: regarding, note,
 * deprecated*), or null with the reason it is not one.
 */
export function parseEvent(raw: unknown): KubeEvent | { skip: string } {
  const e = obj(raw);
  const meta = obj(e.metadata);
  const uid = str(meta.uid, 64);
  if (!uid) return { skip: 'an Event without metadata.uid' };
  const ref = obj(e.involvedObject ?? e.regarding);
  const kind = str(ref.kind, 64);
  const refName = str(ref.name, NAME_CHARS);
  if (!kind || !refName) return { skip: `Event ${uid}: no involvedObject kind and name` };
  const series = obj(e.series);
  // a time that is there but is not one is not replaced by another field's
  for (const f of ['eventTime', 'firstTimestamp', 'lastTimestamp'] as const) {
    const v = e[f];
    if (v !== null && v !== undefined && time(v) === null) return { skip: `Event ${uid}: ${f} is not an RFC 3339 time` };
  }
  if (e.series !== undefined && e.series !== null && time(series.lastObservedTime) === null) return { skip: `Event ${uid}: series.lastObservedTime is not an RFC 3339 time` };
  const first = time(e.firstTimestamp ?? e.deprecatedFirstTimestamp);
  const last = time(e.lastTimestamp ?? e.deprecatedLastTimestamp);
  const eventTime = time(e.eventTime);
  const seriesLast = time(series.lastObservedTime);
  const occurrences: KubeEventOccurrence[] = [];
  let clock: string;
  if (eventTime !== null) {
    // the events.k8s.io recorder: eventTime is the first observation, the series the repeats
    occurrences.push({ us: eventTime, field: 'eventTime' });
    const n = count(series.count);
    if (seriesLast !== null && seriesLast > eventTime && n > 1) occurrences.push({ us: seriesLast, field: 'series.lastObservedTime', repeats: n });
    clock = n > 1 ? `eventTime, then series.lastObservedTime (series.count ${n})` : 'eventTime';
  } else if (first !== null || last !== null) {
    // the legacy recorder: count repeats from firstTimestamp to lastTimestamp (whole seconds)
    const n = count(e.count ?? e.deprecatedCount);
    occurrences.push(first !== null ? { us: first, field: 'firstTimestamp' } : { us: last!, field: 'lastTimestamp' });
    if (first !== null && last !== null && last > first) occurrences.push({ us: last, field: 'lastTimestamp', repeats: Math.max(n, 2) });
    clock = occurrences.length > 1 ? `firstTimestamp, then lastTimestamp (count ${n})` : occurrences[0]!.field;
  } else {
    const created = time(meta.creationTimestamp);
    if (created === null) return { skip: `Event ${uid}: no time in eventTime, firstTimestamp, lastTimestamp or metadata.creationTimestamp` };
    occurrences.push({ us: created, field: 'metadata.creationTimestamp' });
    clock = 'metadata.creationTimestamp (the Event has no time of its own)';
  }
  const source = obj(e.source ?? e.deprecatedSource);
  return {
    namespace: str(meta.namespace, 63) ?? '',
    name: str(meta.name, NAME_CHARS) ?? '',
    uid,
    resourceVersion: str(meta.resourceVersion, 64) ?? '',
    type: str(e.type, 64) ?? 'Normal',
    reason: str(e.reason, 128) ?? '',
    message: str(e.message ?? e.note) ?? '',
    object: { kind, namespace: str(ref.namespace, 63), name: refName, uid: str(ref.uid, 64), fieldPath: str(ref.fieldPath, 512) },
    reporter: str(source.component, 128) ?? str(e.reportingComponent ?? e.reportingController, 128) ?? '',
    host: str(source.host, NAME_CHARS) ?? str(e.reportingInstance, NAME_CHARS),
    occurrences,
    clock,
  };
}

/** How far one list of Events goes: pages of `page` items, `pages` of them, `maxBytes` each. */
const EVENT_LIST_BOUNDS = { page: 500, pages: 4, maxBytes: 8 * 1024 * 1024 } as const;

export interface EventList {
  events: KubeEvent[];
  /** items that are not Events, with why */
  skipped: string[];
  /** true when more pages were left than the bound reads */
  cut: boolean;
  /** the call, for the evidence */
  call: string;
}

/**
 * The Events a field selector picks, in a namespace or all of them (`namespace` null),
 * following `continue` pages up to the bound. `signal` is the caller's deadline.
 */
export async function listEvents(api: KubeApi, namespace: string | null, fieldSelector: string, signal: AbortSignal, bounds = EVENT_LIST_BOUNDS): Promise<EventList> {
  const base = `/api/v1${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/events?fieldSelector=${encodeURIComponent(fieldSelector)}&limit=${bounds.page}`;
  const out: EventList = { events: [], skipped: [], cut: false, call: `GET ${base.replace(/&limit=\d+$/, '')}` };
  let cont: string | null = null;
  for (let page = 0; page < bounds.pages; page++) {
    const path = cont ? `${base}&continue=${encodeURIComponent(cont)}` : base;
    const list = obj(await getJson({ kc: api.kc, server: api.server, what: 'list events', path, signal, maxBytes: bounds.maxBytes, timeoutMs: api.timeoutMs }));
    if (!Array.isArray(list.items)) throw new SourceError('api_server_error', `Kubernetes API server ${api.server} (list events): the answer has no items list`);
    for (const item of list.items) {
      const ev = parseEvent(item);
      if ('skip' in ev) out.skipped.push(ev.skip);
      else out.events.push(ev);
    }
    cont = str(obj(list.metadata).continue, 4096);
    if (!cont) return out;
  }
  out.cut = true;
  return out;
}

/** The container an Event's fieldPath names: spec.containers{name}, spec.initContainers{name}, spec.ephemeralContainers{name}. */
export function containerOfFieldPath(fieldPath: string | null): string | null {
  const m = fieldPath ? /^spec\.(?:containers|initContainers|ephemeralContainers)\{([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\}$/.exec(fieldPath) : null;
  return m ? m[1]! : null;
}
