/**
 * A source's events are kept as they come, the newest `limit` in a bounded heap: the list is
 * the one sorting everything and keeping the tail gives (ties of time and sequence in the
 * order they came), with the same count left out, whatever the order they arrive in.
 */
import t from 'tap';
import type { TimelineEvent } from '../../../src/model/timeline.js';
import { SourceEvents, type TimelineQuery } from '../../../src/view/timeline/window.js';

/** a fixed pseudo-random sequence (an LCG), so a failure can be replayed */
function lcg(seed: number): (n: number) => number {
  let x = seed >>> 0;
  return (n) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % n;
  };
}

t.test('the newest limit, as a stable sort and its tail would give them', async (t) => {
  const rand = lcg(21);
  for (let trial = 0; trial < 300; trial++) {
    const limit = 1 + rand(20);
    const withPods = rand(3) === 0;
    const q: TimelineQuery = { sinceUs: 100, untilUs: 10_000, pods: withPods ? { uids: new Set(['u1']), names: new Set() } : null, sources: new Set(), limit, verbose: false, nowUs: 10_000 };
    const s = new SourceEvents(q);
    const order = rand(3); // 0: oldest first, 1: newest first, 2: any order with ties
    const n = rand(120);
    const all: { us: number; seq: number; k: number; uid: string }[] = [];
    for (let k = 0; k < n; k++) {
      const us = order === 0 ? 100 + k : order === 1 ? 100 + n - k : 100 + rand(8);
      const seq = order === 2 ? rand(3) : order === 1 ? -k : k;
      const uid = rand(2) === 0 ? 'u1' : 'u2';
      all.push({ us, seq, k, uid });
      const event = (): Omit<TimelineEvent, 'time'> => ({ source: 'journal', kind: String(k), severity: 'info', summary: '', evidence: [], pod: { uid, namespace: null, name: null } });
      s.add(us, seq, event);
    }
    const kept = all.filter((x) => !withPods || x.uid === 'u1').sort((a, b) => a.us - b.us || a.seq - b.seq);
    const want = kept.slice(Math.max(0, kept.length - limit)).map((x) => String(x.k));
    const got = s.list().map((x) => x.event.kind);
    if (JSON.stringify(got) !== JSON.stringify(want) || s.dropped !== Math.max(0, kept.length - limit)) {
      t.same({ got, dropped: s.dropped }, { got: want, dropped: Math.max(0, kept.length - limit) }, `trial ${trial}: limit ${limit}, order ${order}, pods ${withPods}`);
      return;
    }
  }
  t.pass('300 trials alike');
});

t.test('an event older than every one kept is left out unbuilt when no pod filter needs it', async (t) => {
  const s = new SourceEvents({ sinceUs: 100, untilUs: 1000, pods: null, sources: new Set(), limit: 2, verbose: false, nowUs: 1000 });
  let built = 0;
  const e = (): Omit<TimelineEvent, 'time'> => (built++, { source: 'journal', kind: 'x', severity: 'info', summary: '', evidence: [] });
  for (let us = 900; us >= 200; us -= 100) s.add(us, 0, e);
  t.equal(built, 2, 'only the two kept were built');
  t.equal(s.dropped, 6);
  t.same(s.list().map((x) => x.us), [800, 900]);
});
