/**
 * GET /v1/timeline through the real app over one assembled node: the captured kernel log
 * (test/fixtures/kmsg/captured-6.1.0-57-amd64.kmsg: an OOM kill at 289.556638 s since boot,
 * hung tasks from 589.498029 s) with a host /proc/stat whose btime puts that boot 700 s ago,
 * the captured runtime state (FAKE CRI server), and real journal files of kubelet, containerd
 * and systemd (systemd-journal-remote), hostile records among them.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatMicros } from '../../src/readers/journal/time.js';
import type { Timeline } from '../../src/model/timeline.js';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { exportEntry, JOURNAL_REMOTE, MACHINE_ID, writeJournal } from '../fixtures/journal/gen.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { POD_UID } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const NOW_MS = Date.now();
const BTIME = Math.floor(NOW_MS / 1000) - 700;
const BOOT_ID = '13aee3a87a774e2d9686f3c19d408b06';
const OOM_POD_UID = 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8';
const ESC = '\x1b';

const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
writeFileSync(path.join(root, 'proc/stat'), `cpu  100 0 100 1000 0 0 0 0 0 0\nintr 0\nctxt 10\nbtime ${BTIME}\nprocesses 100\n`);
writeFileSync(path.join(root, 'proc/sys/kernel/random/boot_id'), '13aee3a8-7a77-4e2d-9686-f3c19d408b06\n');
mkdirSync(path.join(root, 'var/log/pods'), { recursive: true });

// the captured ring, then hostile kernel records: a hung task 100 KiB long with escape
// sequences in it, and one stamped 30 years after boot
const hugeComm = `evil${ESC}]0;pwned\x07${ESC}[2K`;
const kmsgPath = path.join(root, 'kmsg.txt');
writeFileSync(
  kmsgPath,
  readFileSync(kmsgFixture('captured-6.1.0-57-amd64.kmsg'), 'utf8') +
    `3,9001,650000000,-;INFO: task ${hugeComm}:4242 blocked for more than 120 seconds.${'A'.repeat(100_000)}\n` +
    `3,9002,999999999000000,-;INFO: task odd:4243 blocked for more than 120 seconds.\n`,
);

const cri = new FakeCriServer(capturedRuntime(BigInt(NOW_MS) * 1_000_000n));
await cri.start();
t.teardown(() => cri.stop());

const haveJournal = existsSync(JOURNAL_REMOTE);
/** seconds ago → µs since the epoch */
const ago = (s: number) => (NOW_MS - s * 1000) * 1000;
if (haveJournal) {
  const base = (us: number): Array<[string, string]> => [
    ['__REALTIME_TIMESTAMP', String(us)],
    ['__MONOTONIC_TIMESTAMP', String(Math.max(1, us - BTIME * 1_000_000))],
    ['_BOOT_ID', BOOT_ID],
    ['_MACHINE_ID', MACHINE_ID],
    ['_HOSTNAME', 'node1'],
  ];
  const kubelet = (s: number, sev: string, text: string) => {
    const us = ago(s);
    const d = new Date(us / 1000);
    const hdr = `${sev}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')} ${d.toISOString().slice(11, 19)}.${String(us % 1e6).padStart(6, '0')}     702 `;
    return exportEntry([...base(us), ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'kubelet.service'], ['SYSLOG_IDENTIFIER', 'kubelet'], ['_COMM', 'kubelet'], ['_PID', '702'], ['PRIORITY', '6'], ['MESSAGE', hdr + text]]);
  };
  const systemd = (s: number, unit: string, text: string) =>
    exportEntry([...base(ago(s)), ['_TRANSPORT', 'journal'], ['_SYSTEMD_UNIT', 'init.scope'], ['_COMM', 'systemd'], ['_PID', '1'], ['SYSLOG_IDENTIFIER', 'systemd'], ['PRIORITY', '6'], ['UNIT', unit], ['MESSAGE', text]]);
  const containerd = (s: number, prio: string, text: string) =>
    exportEntry([...base(ago(s)), ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'containerd.service'], ['SYSLOG_IDENTIFIER', 'containerd'], ['_COMM', 'containerd'], ['_PID', '256'], ['PRIORITY', prio], ['MESSAGE', text]]);
  await writeJournal(path.join(root, 'var/log/journal'), 'system', [
    kubelet(5000, 'E', 'generic.go:1] "PLEG is not healthy" older than the window'),
    systemd(650, 'kubelet.service', 'Started kubelet.service - kubelet: The Kubernetes Node Agent.'),
    kubelet(640, 'I', 'kubelet.go:2412] "SyncLoop ADD" source="api" pods=["default/lab"]'),
    kubelet(470, 'I', 'prober.go:107] "Probe failed" probeType="Liveness" pod="default/lab" podUID="7f3c2a10-1111-4222-8333-944455556666" containerName="spin"'),
    containerd(300, '3', 'time="x" level=error msg="failed to handle container TaskExit event" error="context deadline exceeded"'),
    kubelet(200, 'E', `generic.go:1] "PLEG is not healthy" pleg was last seen active 3m0s ago${ESC}[2K\r${'B'.repeat(100_000)}`),
    kubelet(100, 'I', 'kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/debug"'),
  ]);
}

const { app, close } = await testApp(['--host-root', root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgPath]);
t.teardown(close);

const get = async (qs: string) => {
  const r = await app.inject({ method: 'GET', url: `/v1/timeline${qs}`, headers: { host: '127.0.0.1' } });
  return { status: r.statusCode, body: r.json() as Timeline & { code?: string; param?: string; detail?: string }, raw: r.body };
};
const kmsgTime = (usec: number) => formatMicros(BTIME * 1_000_000 + usec);

t.test('every layer in one clock, oldest first', async (t) => {
  const { status, body } = await get('');
  t.equal(status, 200);
  t.equal(body.clock.kernel, 'btime');
  t.equal(body.clock.bootTime, formatMicros(BTIME * 1_000_000));
  t.same(Object.keys(body.sources).sort(), ['journal', 'kernel', 'kube', 'oom', 'runtime']);
  t.ok(['journal', 'kernel', 'oom', 'runtime'].every((s) => body.sources[s as 'kernel']!.ok), JSON.stringify(body.sources));
  t.match(body.sources.kube, { ok: true, skipped: /^no cluster access/ }, 'no API server configured: skipped, said in sources');
  const times = body.events.map((e) => e.time);
  t.same(times, [...times].sort(), 'oldest first');
  // the clock: µs since boot + btime
  const oom = body.events.find((e) => e.kind === 'oom-kill')!;
  t.equal(oom.time, kmsgTime(289_556_638), 'the OOM kill at its Killed process record');
  t.match(oom, { source: 'oom', severity: 'critical', pod: { uid: OOM_POD_UID }, container: { id: 'a98aedb44857ac811d725fffb9f71f065b13711cf0e6aa365712cc9d36740c44' } });
  t.match(oom.evidence[0], { source: 'kmsg', seq: 515 });
  const hung = body.events.find((e) => e.kind === 'kernel-hung-task')!;
  t.equal(hung.time, kmsgTime(589_498_029));
  t.match(hung.evidence[0], { source: 'kmsg', seq: 569 });
  // the runtime's own timestamps: oom-main created and exited 490 and 480 s ago, exit code 137
  const exited = body.events.find((e) => e.kind === 'container-exited' && e.container?.name === 'oom-main')!;
  t.match(exited, { source: 'runtime', severity: 'warning', pod: { namespace: 'default', name: 'lab', uid: POD_UID }, container: { attempt: 0 } });
  t.match(exited.summary, /exited with code 137 \(Error\)/);
  t.match(exited.evidence[0], { source: 'cri', call: /^ContainerStatus 765653c5/ });
  const order = ['container-exited', 'oom-kill', 'kernel-hung-task'].map((k) => body.events.findIndex((e) => e.kind === k));
  t.ok(order[0]! < order[1]! && order[1]! < order[2]!, `the exit (480 s ago), the OOM kill (410 s ago), the hung task (110 s ago): ${order}`);
  if (haveJournal) {
    const kinds = body.events.filter((e) => e.source === 'journal').map((e) => e.kind);
    t.same(kinds, ['unit-started', 'probe-failed', 'log-error', 'kubelet-pleg-unhealthy'], 'the notable records, not the SyncLoop info lines, nothing before the window');
    const probe = body.events.find((e) => e.kind === 'probe-failed')!;
    t.match(probe, { pod: { namespace: 'default', name: 'lab', uid: POD_UID } });
    t.match(probe.evidence[0]!.cursor, /^s=/);
  }
  t.equal(body.truncated, false);
});

t.test('hostile kernel and journal records: cut, escaped in text, odd times skipped with a warning', async (t) => {
  const { body } = await get('');
  const evil = body.events.find((e) => e.kind === 'kernel-hung-task' && e.summary.includes('4242'));
  t.ok(evil, 'the huge record is an event');
  t.ok(evil!.summary.length <= 401, `summary bounded (${evil!.summary.length})`);
  t.notOk(body.events.some((e) => e.summary.includes('odd:4243')), 'the record stamped 30 years after boot is not an event');
  t.ok(body.warnings.some((w) => /^kernel: 1 records without a usable time were skipped/.test(w)), body.warnings.join('\n'));
  if (haveJournal) {
    const pleg = body.events.find((e) => e.kind === 'kubelet-pleg-unhealthy')!;
    t.ok(pleg.summary.length <= 401 && pleg.evidence[0]!.excerpt.length <= 2001, 'journal record bounded');
  }
  const text = (await app.inject({ method: 'GET', url: '/v1/timeline?format=text&verbose=true', headers: { host: '127.0.0.1' } })).body;
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f]/.test(text), 'no control character reaches the terminal');
  t.match(text, /evil\\x1b\]0;pwned\\x07/);
});

t.test('text: one aligned line per event, evidence with verbose', async (t) => {
  const r = await app.inject({ method: 'GET', url: '/v1/timeline?format=text&source=runtime', headers: { host: '127.0.0.1' } });
  const lines = r.body.trimEnd().split('\n');
  t.match(lines[0], /^TIME\s+SOURCE\s+POD\s+CONTAINER\s+WHAT$/);
  const exit = lines.find((l) => l.includes('container-exited'))!;
  t.match(exit, /^\d{4}-\d\d-\d\dT[\d:.]+Z\s+runtime\s+default\/lab\s+oom-main\s+container-exited: oom-main attempt 0 exited with code 137/);
  t.equal(exit.indexOf('runtime'), lines[0]!.indexOf('SOURCE'), 'aligned');
  t.notOk(r.body.includes('↳'), 'no evidence without verbose');
  const v = await app.inject({ method: 'GET', url: '/v1/timeline?format=text&source=runtime&verbose=1', headers: { host: '127.0.0.1' } });
  t.match(v.body, /↳ cri ContainerStatus 765653c5[0-9a-f]+: finishedAt=/);
});

t.test('filters: pod, source, since/until', async (t) => {
  const lab = await get('?pod=default/lab');
  t.ok(lab.body.events.length > 0);
  t.ok(lab.body.events.every((e) => e.pod?.namespace === 'default' && e.pod.name === 'lab'), 'only the pod\'s events');
  t.ok(lab.body.events.some((e) => e.kind === 'container-exited'));
  if (haveJournal) t.ok(lab.body.events.some((e) => e.kind === 'probe-failed'), 'kubelet\'s lines naming the pod');
  const byUid = await get(`?pod=${OOM_POD_UID}`);
  t.same(byUid.body.events.map((e) => e.kind), ['oom-kill'], 'a UID: the kernel-attributed pod');
  const two = await get(`?pod=${OOM_POD_UID}&pod=prod/db`);
  t.same(new Set(two.body.events.map((e) => e.pod?.uid ?? e.pod?.name)).size, 2, 'repeatable');

  const ko = await get('?source=kernel&source=oom');
  t.ok(ko.body.events.length > 0 && ko.body.events.every((e) => e.source === 'kernel' || e.source === 'oom'));
  t.same(Object.keys(ko.body.sources).sort(), ['kernel', 'oom']);

  const late = await get(`?since=${encodeURIComponent(kmsgTime(500_000_000))}`);
  t.notOk(late.body.events.some((e) => e.kind === 'oom-kill'), 'since: the OOM kill is before');
  t.ok(late.body.events.some((e) => e.kind === 'kernel-hung-task'));
  t.ok(late.body.events.every((e) => e.time >= kmsgTime(500_000_000)));
  t.equal(late.body.since, kmsgTime(500_000_000));
  const early = await get(`?since=15m&until=${encodeURIComponent(kmsgTime(500_000_000))}`);
  t.ok(early.body.events.some((e) => e.kind === 'oom-kill'));
  t.notOk(early.body.events.some((e) => e.kind === 'kernel-hung-task'), 'until: the hung tasks are after');
  const recent = await get('?since=2m');
  t.notOk(recent.body.events.some((e) => e.kind === 'oom-kill'), 'a duration back from now');

  const kube = await get('?source=kube');
  t.same(kube.body.events, []);
  t.match(kube.body.warnings, [/^kube: no cluster access/], 'asked for without an API server: a warning');
});

t.test('limit keeps the newest events and says it cut', async (t) => {
  const all = await get('?limit=5000');
  t.ok(all.body.events.length > 3);
  const three = await get('?limit=3');
  t.equal(three.body.truncated, true);
  t.same(three.body.events, all.body.events.slice(-3), 'the newest three, oldest first');
  const exact = await get(`?limit=${all.body.events.length}`);
  t.equal(exact.body.truncated, false);
  t.equal(exact.body.events.length, all.body.events.length);
});

t.test('bad parameters: 400 naming the parameter and the reason', async (t) => {
  for (const [qs, param, reason] of [
    ['?limit=0', 'limit', /between 1 and 5000/],
    ['?limit=5001', 'limit', /between 1 and 5000/],
    ['?limit=1e3', 'limit', /integer/],
    ['?since=yesterday', 'since', /RFC 3339 time .* or a duration back from now/],
    ['?until=2026-02-30T00:00:00Z', 'until', /RFC 3339/],
    ['?since=1h&until=2h', 'since', /since must not be after until/],
    ['?source=kernel&source=bogus', 'source', /expected one of kernel, oom, runtime, journal, kube/],
    ['?pod=Default/../x', 'pod', /namespace\/name or a pod UID/],
    ['?verbose=maybe', 'verbose', /./],
    ['?follow=true&until=1m', 'until', /cannot follow up to a time/],
  ] as const) {
    const r = await get(qs);
    t.equal(r.status, 400, qs);
    t.equal(r.body.code, 'bad_parameter', qs);
    if (param) t.equal(r.body.param, param, qs);
    t.match(r.body.detail, reason, `${qs}: ${r.body.detail}`);
  }
});

t.test('a source that fails is a warning; the rest stands', async (t) => {
  cri.delayMs = 60_000;
  t.teardown(() => void (cri.delayMs = 0));
  const r = await get('?source=runtime&source=kernel');
  t.equal(r.status, 200);
  t.equal(r.body.sources.runtime?.ok, false);
  t.ok(r.body.warnings.some((w) => w.startsWith('runtime: ')), r.body.warnings.join('\n'));
  t.ok(r.body.events.some((e) => e.kind === 'kernel-hung-task'), 'the kernel\'s events stand');
});

t.test('in OpenAPI with its bounds', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json', headers: { host: '127.0.0.1' } })).json() as { paths: Record<string, { get: { parameters: Array<{ name: string; schema: Record<string, unknown> }> } }> };
  const params = doc.paths['/v1/timeline']!.get.parameters;
  t.same(params.map((p) => p.name).sort(), ['follow', 'format', 'limit', 'pod', 'since', 'source', 'until', 'verbose']);
  t.match(JSON.stringify(params.find((p) => p.name === 'limit')!.schema), /"maximum":5000/);
});

t.test('follow: NDJSON events through the real server, ended by the client', async (t) => {
  const http = await import('node:http');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as import('node:net').AddressInfo;
  const first = await new Promise<{ status: number; type: string; lines: string[] }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/v1/timeline?follow=true&source=kernel' }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        const lines = buf.split('\n');
        if (lines.length > 2) {
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), lines: lines.slice(0, 2) });
          req.destroy();
        }
      });
    });
    req.on('error', reject);
  });
  t.equal(first.status, 200);
  t.match(first.type, /application\/x-ndjson/);
  t.match(JSON.parse(first.lines[0]!), { warning: /^kernel: 1 records without a usable time/ }, 'a warning as its own frame');
  t.match(JSON.parse(first.lines[1]!), { source: 'kernel', kind: 'kernel-hung-task', time: kmsgTime(589_498_029) }, 'then the window\'s events');
});

t.test('triage findings name their window of the timeline', async (t) => {
  const r = await app.inject({ method: 'GET', url: '/v1/triage', headers: { host: '127.0.0.1' } });
  const report = r.json() as { findings: Array<{ id: string; window?: { since: string; until: string } }> };
  // triage times the ring with the agent's own boot, not this fixture's btime: the captured hung
  // tasks (589 s after boot) are in the hour only on a machine up for 10 to 70 minutes, and give
  // their window then; the record stamped 30 years on never makes one
  const hung = report.findings.find((f) => f.id === 'kernel-hung-task');
  t.ok(hung, report.findings.map((f) => f.id).join(', '));
  const until = hung!.window === undefined ? null : Date.parse(hung!.window.until);
  t.ok(until === null || until <= Date.now() + 60_000, `a record later than now gives no window (${JSON.stringify(hung!.window)})`);
  t.notOk(report.findings.find((f) => f.id === 'runtime-slow')?.window, 'a rule without times gives none');
  if (!haveJournal) return;
  const pleg = report.findings.find((f) => f.id === 'kubelet-pleg-unhealthy');
  t.same(pleg?.window, { since: formatMicros(ago(200) - 300_000_000), until: formatMicros(ago(200) + 60_000_000) }, 'five minutes before the first record, one after the last');
  const w = await get(`?since=${encodeURIComponent(pleg!.window!.since)}&until=${encodeURIComponent(pleg!.window!.until)}`);
  t.ok(w.body.events.some((e) => e.kind === 'kubelet-pleg-unhealthy'), 'the window holds the record');
  t.ok(w.body.events.some((e) => e.kind === 'probe-failed'), 'the probe failure 270 s before it, a cause');
  t.notOk(w.body.events.some((e) => e.kind === 'unit-started'), 'not kubelet\'s start 450 s before it');
});
