/** The timeline's parts on their own: the clock, the merge's order and bound, what a journal record is. */
import t from 'tap';
import type { TimelineEvent, TimelineSource } from '../../src/model/timeline.js';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import type { JournalRecord } from '../../src/readers/journal/record.js';
import { klogSeverity } from '../../src/readers/journal/record.js';
import { kernelClock, parseBtime } from '../../src/view/timeline/clock.js';
import { classify, podOfRecord } from '../../src/view/timeline/journal.js';
import { mergeNewest } from '../../src/view/timeline/merge.js';
import { SourceEvents, type Timed, type TimelineQuery } from '../../src/view/timeline/window.js';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ev = (source: TimelineSource, kind: string): TimelineEvent => ({ time: '', source, kind, severity: 'info', summary: kind, evidence: [] });
const timed = (us: number, seq: number, source: TimelineSource, kind = `${source}${seq}`): Timed => ({ us, seq, event: ev(source, kind) });

t.test('merge: time, then source order, then the source\'s sequence; the newest limit kept', async (t) => {
  const kernel = [timed(10, 5, 'kernel', 'k5'), timed(20, 1, 'kernel', 'k1'), timed(20, 2, 'kernel', 'k2')];
  const journal = [timed(5, 0, 'journal', 'j0'), timed(20, 0, 'journal', 'j-tie'), timed(30, 9, 'journal', 'j9')];
  const runtime = [timed(20, 7, 'runtime', 'r-tie')];
  const all = mergeNewest([journal, kernel, runtime], 100);
  t.same(all.events.map((e) => e.kind), ['j0', 'k5', 'k1', 'k2', 'r-tie', 'j-tie', 'j9']);
  t.equal(all.truncated, false);
  const three = mergeNewest([journal, kernel, runtime], 3);
  t.same(three.events.map((e) => e.kind), ['r-tie', 'j-tie', 'j9'], 'the newest three, oldest first');
  t.equal(three.truncated, true);
  t.same(mergeNewest([journal, kernel, runtime], 7).truncated, false, 'exactly the limit is not cut');
  t.same(mergeNewest([[], []], 5).events, []);
});

const q = (o: Partial<TimelineQuery> = {}): TimelineQuery => ({ sinceUs: 100, untilUs: 1000, pods: null, sources: new Set(), limit: 3, verbose: false, nowUs: 1000, ...o });

t.test('a source\'s list: the window, the pod filter, usable times, its bound', async (t) => {
  const s = new SourceEvents(q({ pods: { uids: new Set(['u1']), names: new Set(['ns/web']) } }));
  const pod = (uid: string | null, namespace: string | null = null, name: string | null = null) => () => ({ ...ev('runtime', 'x'), pod: { uid, namespace, name } });
  s.add(50, 0, pod('u1')); // before the window
  s.add(2000, 0, pod('u1')); // after the window
  s.add(61_000_001, 0, pod('u1')); // later than now (and a minute's slack): not a time
  s.add(null, 0, pod('u1'));
  s.add(Number.NaN, 0, pod('u1'));
  s.add(0, 0, pod('u1'));
  s.add(500, 1, pod('u2')); // another pod
  s.add(500, 2, () => ev('runtime', 'no pod'));
  s.add(400, 3, pod('u1'));
  s.add(300, 4, pod(null, 'ns', 'web'));
  s.add(200, 5, pod('u1'));
  s.add(600, 6, pod('u1'));
  const list = s.list();
  t.same(list.map((x) => x.us), [300, 400, 600], 'sorted, the newest three');
  t.equal(s.dropped, 1);
  t.equal(s.untimed, 4, 'absent, NaN, 0 and past now');
  t.equal(list[0]!.event.time, '1970-01-01T00:00:00.000300Z', 'every time written from its µs');
});

t.test('the clock: btime from the host\'s /proc/stat, else the agent\'s clocks', async (t) => {
  t.equal(parseBtime('cpu  1 2 3\nbtime 1795974060\nprocesses 4\n'), 1795974060);
  t.equal(parseBtime('cpu 1\n'), null);
  t.equal(parseBtime('btime -5\n'), null);
  t.equal(parseBtime('xbtime 5\n'), null);
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-clock-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const none = await kernelClock(new HostFs(root), () => 42_000_000);
  t.match(none, { bootUs: 42_000_000, clock: { kernel: 'agent', bootTime: '1970-01-01T00:00:42.000000Z', detail: /no \/proc\/stat/ } });
  mkdirSync(path.join(root, 'proc'));
  writeFileSync(path.join(root, 'proc/stat'), 'cpu 1\nbtime 1795974060\n');
  const bt = await kernelClock(new HostFs(root), () => 42);
  t.match(bt, { bootUs: 1795974060_000_000, clock: { kernel: 'btime', bootTime: '2026-11-29T17:41:00.000000Z' } });
  // a kmsg record 289.556638 s after that boot
  t.equal(new Date((bt.bootUs + 289_556_638) / 1000).toISOString(), '2026-11-29T17:45:49.556Z');
});

const rec = (message: string, o: Partial<JournalRecord> = {}): JournalRecord => ({
  time: '2026-11-29T17:42:28.000000Z',
  unit: 'kubelet.service',
  aboutUnit: null,
  identifier: 'kubelet',
  pid: 702,
  priority: 6,
  bootId: null,
  transport: 'stdout',
  message,
  cursor: 's=1',
  klogSeverity: klogSeverity(message),
  monotonicUs: null,
  ...o,
});
const K = (letter: string, text: string) => `${letter}1129 17:42:28.926903     702 ${text}`;

t.test('what a journal record is in a timeline', async (t) => {
  t.same(classify(rec(K('I', 'kubelet.go:1] "SyncLoop ADD"')), false), null, 'routine info: not an event');
  t.same(classify(rec(K('I', 'kubelet.go:1] "SyncLoop ADD"')), true), { kind: 'log', severity: 'info' }, 'verbose: every record');
  t.same(classify(rec(K('E', 'generic.go:1] "PLEG is not healthy"')), false), { kind: 'kubelet-pleg-unhealthy', severity: 'warning' }, 'triage\'s patterns');
  t.same(classify(rec(K('F', 'server.go:1] "failed to run Kubelet"')), false), { kind: 'log-fatal', severity: 'critical' });
  t.same(classify(rec(K('W', 'x.go:1] "something"')), false), { kind: 'log-warning', severity: 'warning' });
  t.same(classify(rec(K('I', 'prober.go:107] "Probe failed" pod="a/b"')), false), { kind: 'probe-failed', severity: 'warning' });
  t.same(classify(rec('time="x" level=error msg="failed"', { identifier: 'containerd' }), false), { kind: 'log-error', severity: 'warning' }, 'logrus level');
  t.same(classify(rec('plain text', { identifier: 'containerd', priority: 3 }), false), { kind: 'log-error', severity: 'warning' }, 'priority');
  t.same(classify(rec('E-looking but not klog', { priority: 6 }), false), null);
  const sd = (m: string) => classify(rec(m, { identifier: 'systemd', aboutUnit: 'kubelet.service', unit: 'init.scope' }), false);
  t.same(sd('Started kubelet.service - kubelet.'), { kind: 'unit-started', severity: 'info' });
  t.same(sd('Stopped kubelet.service - kubelet.'), { kind: 'unit-stopped', severity: 'info' });
  t.same(sd('kubelet.service: Main process exited, code=exited, status=1/FAILURE'), { kind: 'unit-exited', severity: 'warning' });
  t.same(sd('kubelet.service: Failed with result \'exit-code\'.'), { kind: 'unit-failed', severity: 'critical' });
  t.same(sd('kubelet.service: Scheduled restart job, restart counter is at 3.'), { kind: 'unit-restart', severity: 'warning' });
  t.same(sd('kubelet.service: Consumed 1.2s CPU time.'), null);
});

t.test('the pod a kubelet line names, bounded and by shape', async (t) => {
  t.same(podOfRecord(K('I', 'prober.go:107] "Probe failed" pod="default/lab" podUID="7f3c2a10-1111-4222-8333-944455556666"')), { namespace: 'default', name: 'lab', uid: '7f3c2a10-1111-4222-8333-944455556666' });
  t.same(podOfRecord(K('I', 'x.go:1] "msg" pod="default/lab"')), { namespace: 'default', name: 'lab', uid: null });
  t.equal(podOfRecord(K('I', 'x.go:1] "msg" pod="Bad Name/../x"')), null, 'not a pod reference');
  t.equal(podOfRecord(K('I', `x.go:1] "msg" pod="${'a'.repeat(400)}/b"`)), null, 'too long');
  t.equal(podOfRecord(`${'x'.repeat(10_000)} pod="default/lab"`), null, 'only the head is searched');
  t.equal(podOfRecord(K('I', 'x.go:1] "no pod here"')), null);
});
