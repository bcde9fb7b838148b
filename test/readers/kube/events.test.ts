/** The Event parser on the shapes both recorders write, events.k8s.io's names, and odd input. */
import t from 'tap';
import { containerOfFieldPath, parseEvent, type KubeEvent } from '../../../src/readers/kube/events.js';
import { eventKind } from '../../../src/view/timeline/kube.js';
import { parseRfc3339Micros } from '../../../src/readers/journal/time.js';
import { legacyEvent, seriesEvent } from '../../helpers/kube-events.js';

const ref = { kind: 'Pod' as const, name: 'lab', namespace: 'default', uid: '7f3c2a10-1111-4222-8333-944455556666', fieldPath: 'spec.containers{oom-main}' };
const T0 = Date.UTC(2026, 11, 2, 10, 0, 0);
const ok = (raw: unknown): KubeEvent => {
  const e = parseEvent(raw);
  if ('skip' in e) throw new Error(e.skip);
  return e;
};

t.test('legacy recorder: first and last occurrence, count', async (t) => {
  const e = ok(legacyEvent({ ref, reason: 'BackOff', message: 'Back-off restarting failed container', type: 'Warning', host: 'node-a', firstMs: T0, lastMs: T0 + 90_000, count: 7 }));
  t.same(e.occurrences, [
    { us: T0 * 1000, field: 'firstTimestamp' },
    { us: (T0 + 90_000) * 1000, field: 'lastTimestamp', repeats: 7 },
  ]);
  t.match(e, { reason: 'BackOff', type: 'Warning', reporter: 'kubelet', host: 'node-a', object: { kind: 'Pod', name: 'lab', fieldPath: 'spec.containers{oom-main}' } });
  t.equal(e.clock, 'firstTimestamp, then lastTimestamp (count 7)');
  const once = ok(legacyEvent({ ref, reason: 'Pulled', message: 'x', firstMs: T0 }));
  t.same(once.occurrences, [{ us: T0 * 1000, field: 'firstTimestamp' }], 'once: one occurrence');
});

t.test('events.k8s.io recorder: eventTime with its µs, series', async (t) => {
  const us = T0 * 1000 + 123_456;
  const e = ok(seriesEvent({ ref, reason: 'Unhealthy', message: 'Liveness probe failed', controller: 'kubelet', instance: 'node-a', action: 'Probe', eventUs: us, series: { count: 3, lastUs: us + 60_000_000 } }));
  t.same(e.occurrences, [
    { us, field: 'eventTime' },
    { us: us + 60_000_000, field: 'series.lastObservedTime', repeats: 3 },
  ]);
  t.equal(e.reporter, 'kubelet');
  t.equal(e.host, 'node-a');
  // events.k8s.io/v1 names (regarding, note, deprecated*)
  const v1 = ok({ metadata: { uid: 'u1', namespace: 'default', name: 'n', resourceVersion: '9' }, regarding: { kind: 'Node', name: 'node-a' }, note: 'Node node-a status is now: NodeReady', reason: 'NodeReady', type: 'Normal', eventTime: '2026-12-02T10:00:00.000001Z', reportingController: 'kubelet', reportingInstance: 'node-a' });
  t.match(v1, { message: 'Node node-a status is now: NodeReady', reporter: 'kubelet', object: { kind: 'Node', name: 'node-a' }, occurrences: [{ us: parseRfc3339Micros('2026-12-02T10:00:00.000001Z'), field: 'eventTime' }] });
});

t.test('odd input: skipped with the reason, never thrown; text bounded', async (t) => {
  const base = legacyEvent({ ref, reason: 'X', message: 'x', firstMs: T0 });
  for (const [raw, why] of [
    [null, /without metadata.uid/],
    ['an event', /without metadata.uid/],
    [{ ...base, involvedObject: {} }, /no involvedObject kind and name/],
    [{ ...base, firstTimestamp: 'yesterday' }, /firstTimestamp is not an RFC 3339 time/],
    [{ ...base, firstTimestamp: 1764669600 }, /firstTimestamp is not an RFC 3339 time/],
    [{ ...base, eventTime: '2026-02-30T00:00:00.000000Z' }, /eventTime is not/],
    [{ ...base, series: { count: 2, lastObservedTime: 'x'.repeat(100) } }, /series.lastObservedTime is not/],
    [{ ...base, firstTimestamp: null, lastTimestamp: null, metadata: { uid: 'u' } }, /no time in eventTime, firstTimestamp, lastTimestamp or metadata.creationTimestamp/],
  ] as const) {
    const r = parseEvent(raw);
    t.ok('skip' in r, JSON.stringify(raw)?.slice(0, 80));
    if ('skip' in r) t.match(r.skip, why);
  }
  const created = ok({ ...base, firstTimestamp: null, lastTimestamp: null });
  t.same(created.occurrences, [{ us: Math.floor(T0 / 1000) * 1_000_000, field: 'metadata.creationTimestamp' }], 'no time of its own: its creation, said');
  const huge = ok({ ...base, message: 'm'.repeat(1_000_000), reason: 'r'.repeat(10_000), count: -5 });
  t.equal(huge.message.length, 4096);
  t.equal(huge.reason.length, 128);
});

t.test('kinds and container names', async (t) => {
  t.equal(eventKind('BackOff'), 'event-back-off');
  t.equal(eventKind('OOMKilling'), 'event-oom-killing');
  t.equal(eventKind('FailedCreatePodSandBox'), 'event-failed-create-pod-sand-box');
  t.equal(eventKind(''), 'event');
  t.equal(eventKind('\x1b[2J'), 'event-2-j');
  t.equal(containerOfFieldPath('spec.containers{oom-main}'), 'oom-main');
  t.equal(containerOfFieldPath('spec.initContainers{init}'), 'init');
  t.equal(containerOfFieldPath('spec.containers{Bad Name}'), null);
  t.equal(containerOfFieldPath(null), null);
});
