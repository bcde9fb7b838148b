/**
 * GET /v1/timeline's kube source through the real app against the FAKE API server: the
 * Events of this node and of the pods bound to it, in both recorders' shapes (legacy
 * count/firstTimestamp/lastTimestamp, events.k8s.io eventTime/series), each at its first and
 * last occurrence; a 403, an unreachable or hung API server, a huge answer and an Event
 * without a usable time are warnings and the rest of the timeline stands.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Timeline } from '../../src/model/timeline.js';
import { formatMicros } from '../../src/readers/journal/time.js';
import { testApp } from '../helpers/app.js';
import { apiPod, FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { legacyEvent, seriesEvent, type Ref } from '../helpers/kube-events.js';

const NOW_MS = Date.now();
const ago = (s: number) => NOW_MS - s * 1000;
/** a MicroTime with µs of its own */
const agoUs = (s: number) => ago(s) * 1000 + 123_456;
const sec = (ms: number) => formatMicros(Math.floor(ms / 1000) * 1_000_000);
const LAB = '7f3c2a10-1111-4222-8333-944455556666';
const OTHER = '9a9a9a9a-1111-4222-8333-944455556666';
const lab: Ref = { kind: 'Pod', name: 'lab', namespace: 'default', uid: LAB };
const oomMain: Ref = { ...lab, fieldPath: 'spec.containers{oom-main}' };
const ESC = '\x1b';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-kube-'));
mkdirSync(path.join(dir, 'proc'), { recursive: true });
writeFileSync(path.join(dir, 'proc/stat'), `cpu 1\nbtime ${Math.floor(NOW_MS / 1000) - 700}\n`);
writeFileSync(path.join(dir, 'kmsg.txt'), '3,1,400000000,-;INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.\n');
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
t.teardown(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

fake.pods = [apiPod({ name: 'lab', uid: LAB, nodeName: 'node-a' }), apiPod({ name: 'web', namespace: 'shop', uid: OTHER, nodeName: 'node-b' })];
const base = [
  seriesEvent({ ref: lab, reason: 'Scheduled', message: 'Successfully assigned default/lab to node-a', controller: 'default-scheduler', instance: 'default-scheduler-cp-1', action: 'Binding', eventUs: agoUs(650), uid: 'e0000000-0000-4000-8000-000000000001' }),
  legacyEvent({ ref: { kind: 'Node', name: 'node-a', uid: 'node-a' }, reason: 'NodeNotReady', message: 'Node node-a status is now: NodeNotReady', type: 'Normal', component: 'node-controller', firstMs: ago(500), uid: 'e0000000-0000-4000-8000-000000000002' }),
  legacyEvent({ ref: oomMain, reason: 'BackOff', message: 'Back-off restarting failed container oom-main in pod lab_default(7f3c2a10-1111-4222-8333-944455556666)', type: 'Warning', host: 'node-a', firstMs: ago(600), lastMs: ago(100), count: 7, uid: 'e0000000-0000-4000-8000-000000000003' }),
  seriesEvent({ ref: oomMain, reason: 'Unhealthy', message: 'Liveness probe failed: HTTP probe failed with statuscode: 500', type: 'Warning', controller: 'kubelet', instance: 'node-a', action: 'Probe', eventUs: agoUs(300), series: { count: 3, lastUs: agoUs(200) }, uid: 'e0000000-0000-4000-8000-000000000004' }),
  // older than the window, another node's, another node's pod
  legacyEvent({ ref: oomMain, reason: 'Pulled', message: 'Container image already present', firstMs: ago(7200), uid: 'e0000000-0000-4000-8000-000000000005' }),
  legacyEvent({ ref: { kind: 'Node', name: 'node-b', uid: 'node-b' }, reason: 'Rebooted', message: 'Node node-b has been rebooted', type: 'Warning', firstMs: ago(50) }),
  legacyEvent({ ref: { kind: 'Pod', name: 'web', namespace: 'shop', uid: OTHER }, reason: 'Killing', message: 'Stopping container web', firstMs: ago(40) }),
];
// hostile: control characters and 100 KiB in a message; no time anywhere; a time that is not one
const evil = legacyEvent({ ref: oomMain, reason: `Evil${ESC}[2K`, message: `pwned${ESC}]0;title\x07${'M'.repeat(100_000)}`, type: 'Warning', firstMs: ago(150), uid: 'e0000000-0000-4000-8000-000000000006' });
const timeless = { ...legacyEvent({ ref: lab, reason: 'NoTime', message: 'x', firstMs: ago(10) }), firstTimestamp: null, lastTimestamp: null, metadata: { name: 'lab.1', namespace: 'default', uid: 'e0000000-0000-4000-8000-000000000007', resourceVersion: '1' } };
const oddTime = { ...legacyEvent({ ref: lab, reason: 'OddTime', message: 'x', firstMs: ago(10) }), firstTimestamp: '2026-13-45T99:00:00Z', lastTimestamp: 'yesterday' };
fake.events = [...base, evil, timeless, oddTime];

const { app, close } = await testApp(['--host-root', dir, '--kmsg-path', path.join(dir, 'kmsg.txt'), '--kubeconfig', kubeconfig, '--node-name', 'node-a']);
t.teardown(close);
const get = async (qs: string) => {
  const r = await app.inject({ method: 'GET', url: `/v1/timeline${qs}`, headers: { host: '127.0.0.1' } });
  return { status: r.statusCode, body: r.json() as Timeline, raw: r.body };
};

t.test('the node\'s and its pods\' Events, first and last occurrence, with uid and resourceVersion', async (t) => {
  const before = fake.requests.length;
  const { status, body } = await get('?source=kube');
  t.equal(status, 200);
  t.match(body.sources.kube, { ok: true });
  const rows = body.events.map((e) => [e.time, e.kind, e.severity, e.pod?.name ?? null, e.container?.name ?? null]);
  t.same(rows, [
    [formatMicros(agoUs(650)), 'event-scheduled', 'info', 'lab', null],
    [sec(ago(600)), 'event-back-off', 'warning', 'lab', 'oom-main'],
    [sec(ago(500)), 'event-node-not-ready', 'info', null, null],
    [formatMicros(agoUs(300)), 'event-unhealthy', 'warning', 'lab', 'oom-main'],
    [formatMicros(agoUs(200)), 'event-unhealthy', 'warning', 'lab', 'oom-main'],
    [sec(ago(150)), 'event-evil-2-k', 'warning', 'lab', 'oom-main'],
    [sec(ago(100)), 'event-back-off', 'warning', 'lab', 'oom-main'],
  ], 'oldest first: MicroTimes keep their µs; not other nodes\' or their pods\', not before the window');
  const backOff = body.events.filter((e) => e.kind === 'event-back-off');
  t.match(backOff[0]!.summary, /^kubelet BackOff: Back-off restarting failed container oom-main/);
  t.match(backOff[1]!.summary, new RegExp(`\\(7 times since ${sec(ago(600)).replace(/\./g, '\\.')}\\)$`));
  t.match(backOff[1]!.evidence[0], { source: 'kube', call: /^Event default\/lab\.[0-9a-f]+ uid=e0000000-0000-4000-8000-000000000003 resourceVersion=\d+$/, excerpt: /^lastTimestamp=.* \(times: firstTimestamp, then lastTimestamp \(count 7\)\) type=Warning reason=BackOff involvedObject=Pod\/lab fieldPath=spec.containers\{oom-main\}/ });
  const unhealthy = body.events.filter((e) => e.kind === 'event-unhealthy');
  t.match(unhealthy[0]!.evidence[0]!.excerpt, /^eventTime=.* \(times: eventTime, then series\.lastObservedTime \(series\.count 3\)\)/);
  t.match(unhealthy[1]!.evidence[0]!.excerpt, /^series\.lastObservedTime=/);
  t.match(body.events[2]!.summary, /^node-controller NodeNotReady node\/node-a: Node node-a status is now: NodeNotReady$/);
  // hostile: bounded, skipped with a warning, escaped in the text form
  const e = body.events.find((x) => x.kind === 'event-evil-2-k')!;
  t.ok(e.summary.length <= 401 && e.evidence[0]!.excerpt.length <= 2001, 'bounded');
  t.ok(body.warnings.some((w) => /^kube: 2 items of GET \/api\/v1\/namespaces\/default\/events\?fieldSelector=involvedObject\.uid%3D7f3c.* were not Events that can be timed: Event e0000000-0000-4000-8000-000000000007: no time/.test(w)), body.warnings.join('\n'));
  t.notOk(body.events.some((x) => /NoTime|OddTime/.test(x.summary)));
  const text = (await app.inject({ method: 'GET', url: '/v1/timeline?source=kube&format=text&verbose=1', headers: { host: '127.0.0.1' } })).body;
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f]/.test(text), 'no control character reaches the terminal');
  t.match(text, /kube\s+default\/lab\s+oom-main\s+event-back-off: kubelet BackOff/);
  // the calls: the node's Events, the pods on the node, each pod's Events by UID in its namespace
  const urls = fake.requests.slice(before).map((r) => decodeURIComponent(r.url));
  t.ok(urls.includes('/api/v1/events?fieldSelector=involvedObject.kind=Node,involvedObject.name=node-a&limit=500'), urls.join('\n'));
  t.ok(urls.some((u) => u.startsWith('/api/v1/pods?fieldSelector=spec.nodeName=node-a')));
  t.ok(urls.includes(`/api/v1/namespaces/default/events?fieldSelector=involvedObject.uid=${LAB}&limit=500`));
  t.notOk(urls.some((u) => u.includes(OTHER)), 'no list for another node\'s pod');
});

t.test('default sources include kube when configured; pod narrows to that pod\'s Events', async (t) => {
  const all = await get('');
  t.same(Object.keys(all.body.sources).sort(), ['journal', 'kernel', 'kube', 'oom', 'runtime']);
  t.ok(all.body.events.some((e) => e.source === 'kube') && all.body.events.some((e) => e.source === 'kernel'));
  const before = fake.requests.length;
  const one = await get('?source=kube&pod=default/lab');
  t.ok(one.body.events.length > 0 && one.body.events.every((e) => e.pod?.uid === LAB));
  t.notOk(fake.requests.slice(before).some((r) => r.url.includes('involvedObject.kind%3DNode')), 'no node list for a pod filter');
  const none = await get(`?source=kube&pod=${OTHER}`);
  t.same(none.body.events, [], 'a pod of another node has none here');
});

t.test('403, huge answer: a warning; the rest stands', async (t) => {
  t.teardown(() => void ((fake.mode.events = 'ok'), (fake.events = [...base, evil, timeless, oddTime])));
  fake.mode.events = 'forbidden';
  const r = await get('?source=kube&source=kernel');
  t.equal(r.status, 200);
  t.match(r.body.sources.kube, { ok: false, error: /refused nodetruth's credentials: list events: 403 events is forbidden/ });
  t.match(r.body.warnings, [/^kube: Kubernetes API server .* refused/]);
  t.ok(r.body.events.some((e) => e.kind === 'kernel-hung-task'), 'the kernel\'s events stand');

  fake.mode.events = 'ok';
  fake.events = [legacyEvent({ ref: lab, reason: 'Huge', message: 'H'.repeat(9 * 1024 * 1024), firstMs: ago(5) })];
  const big = await get('?source=kube');
  t.equal(big.status, 200);
  t.match(big.body.warnings, [/^kube: .*list events\): the answer passed 8388608 bytes; not read further/]);
});

t.test('more pages than the bound: the first pages, and it says so', async (t) => {
  t.teardown(() => void (fake.events = [...base, evil, timeless, oddTime]));
  fake.events = Array.from({ length: 2001 }, (_, i) => legacyEvent({ ref: { kind: 'Node', name: 'node-a', uid: 'node-a' }, reason: 'NodeHasSufficientMemory', message: `m${i}`, firstMs: ago(60) }));
  const r = await get('?source=kube&limit=5000');
  t.equal(r.body.events.length, 2000, 'four pages of 500');
  t.match(r.body.warnings, [/^kube: GET \/api\/v1\/events\?fieldSelector=.*: more Events than one read takes/]);
});

t.test('more Events than the bound over all pods: the rest of the pods are not listed, and it says so', async (t) => {
  const pods = fake.pods;
  t.teardown(() => void ((fake.pods = pods), (fake.events = [...base, evil, timeless, oddTime])));
  const uid = (i: number) => `5e5e5e5e-0000-4000-8000-${String(i).padStart(12, '0')}`;
  fake.pods = Array.from({ length: 14 }, (_, i) => apiPod({ name: `busy-${i}`, namespace: 'load', uid: uid(i), nodeName: 'node-a' }));
  fake.events = fake.pods.flatMap((_, i) => Array.from({ length: 2000 }, (_, j) => legacyEvent({ ref: { kind: 'Pod', name: `busy-${i}`, namespace: 'load', uid: uid(i) }, reason: 'Pulled', message: `m${j}`, firstMs: ago(30) })));
  const before = fake.count('/api/v1/namespaces/load/events');
  const r = await get('?source=kube&limit=10');
  t.equal(r.status, 200);
  t.ok(r.body.warnings.some((w) => /^kube: 20000 Events were read: the Events of \d+ more pods were not listed$/.test(w)), r.body.warnings.join('\n'));
  t.ok(fake.count('/api/v1/namespaces/load/events') - before < 14 * 4, 'not every pod\'s pages were asked for');
});

t.test('a hung API server: the deadline, then a warning', async (t) => {
  t.teardown(() => void (fake.mode.events = 'ok'));
  fake.mode.events = 'hang';
  const r = await get('?source=kube&source=kernel');
  t.equal(r.status, 200);
  t.match(r.body.sources.kube, { ok: false, error: 'kube did not answer within 8000 ms' });
  t.ok(r.body.events.some((e) => e.kind === 'kernel-hung-task'));
});

t.test('no cluster access: noted in sources; a warning only when kube is asked for', async (t) => {
  const bare = await testApp(['--host-root', dir, '--kmsg-path', path.join(dir, 'kmsg.txt'), '--node-name', 'node-a']);
  t.teardown(() => bare.close());
  const q = async (qs: string) => (await bare.app.inject({ method: 'GET', url: `/v1/timeline${qs}`, headers: { host: '127.0.0.1' } })).json() as Timeline;
  const d = await q('?source=kernel&source=kube');
  t.match(d.sources.kube, { ok: false, error: /no cluster access/ });
  t.match(d.warnings, [/^kube: no cluster access: not running in a pod/]);
  const def = await q('');
  t.match(def.sources.kube, { ok: true, events: 0, skipped: /no cluster access/ }, 'not asked by name: skipped, not failed');
  t.notOk(def.sources.kube!.error);
  t.notOk(def.warnings.some((w) => w.startsWith('kube:')), def.warnings.join('\n'));
  // unreachable: a kubeconfig naming a port nobody listens on
  const gone = new FakeKubeApiServer();
  await gone.start();
  const cfg = gone.writeKubeconfig(mkdtempSync(path.join(dir, 'gone-')));
  await gone.stop();
  const off = await testApp(['--host-root', dir, '--kmsg-path', path.join(dir, 'kmsg.txt'), '--kubeconfig', cfg, '--node-name', 'node-a']);
  t.teardown(() => off.close());
  const u = (await off.app.inject({ method: 'GET', url: '/v1/timeline?source=kube&source=kernel', headers: { host: '127.0.0.1' } })).json() as Timeline;
  t.match(u.warnings, [/^kube: cannot reach the Kubernetes API server .*ECONNREFUSED/]);
  t.ok(u.events.some((e) => e.kind === 'kernel-hung-task'));
});


t.test('follow: Events only when source=kube is asked (each poll lists them once per pod)', async (t) => {
  const http = await import('node:http');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as import('node:net').AddressInfo;
  /** the first `n` NDJSON frames of a follow stream, then the client goes away */
  const frames = (qs: string, n: number) =>
    new Promise<unknown[]>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/v1/timeline?follow=true${qs}` }, (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          const lines = buf.split('\n');
          if (lines.length > n) {
            resolve(lines.slice(0, n).map((l) => JSON.parse(l) as unknown));
            req.destroy();
          }
        });
      });
      req.on('error', reject);
    });
  const lists = () => fake.requests.filter((r) => /^\/api\/v1\/(?:namespaces\/[^/]+\/)?events\?/.test(r.url)).length;
  const b0 = lists();
  await frames('&source=kube&pod=default/lab', 1);
  const b1 = lists();
  t.ok(b1 > b0, 'asked for: listed');
  await frames('', 1);
  t.equal(lists(), b1, 'no Event list for the default sources');
});
