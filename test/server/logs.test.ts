import http from 'node:http';
import { mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BOOTS } from '../fixtures/journal/gen.js';
import { makeJournalHost } from '../fixtures/journal/host.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { realNodeSpec, writeHostRoot, POD_UID, OOM_CHILD_ID } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { writePodLogs, LOG_CONTAINER_ID } from '../fixtures/podlogs.js';
import { alive } from '../helpers/pids.js';

const host = await makeJournalHost();
t.teardown(host.cleanup);
writeHostRoot(host.root, realNodeSpec('systemd'));
mkdirSync(path.join(host.root, 'proc/sys/kernel/random'), { recursive: true });
const b = BOOTS[2];
writeFileSync(path.join(host.root, 'proc/sys/kernel/random/boot_id'), `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}\n`);
mkdirSync(path.join(host.root, 'var/log/apt'), { recursive: true });
writeFileSync(path.join(host.root, 'var/log/apt/history.log'), 'Start-Date: 2026-11-29\nCommandline: apt-get install containerd\nEnd-Date: 2026-11-29\n');
mkdirSync(path.join(host.root, 'etc'), { recursive: true });
writeFileSync(path.join(host.root, 'etc/shadow'), 'root:SECRET:::\n');
symlinkSync('/etc/shadow', path.join(host.root, 'var/log/escape.log'));

writePodLogs(host.root);
const ta = await testApp(['--host-root', host.root, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--max-follows', '3']);
t.teardown(() => ta.close());
const get = (url: string, headers: Record<string, string> = {}) => ta.app.inject({ method: 'GET', url, headers });

t.test('/v1/logs: journal records with kubelet parameter names', async (t) => {
  const r = await get('/v1/logs?query=kubelet&tailLines=3');
  t.equal(r.statusCode, 200, r.body);
  const body = r.json();
  t.equal(body.records.length, 3);
  t.match(body.records[2], { unit: 'kubelet.service', klogSeverity: 'I', bootId: BOOTS[2] });
  t.same(body.warnings, []);
  const two = await get('/v1/logs?query=kubelet&query=containerd&boot=-1&pattern=shim');
  t.equal(two.json().records.length, 1);
  const txt = await get('/v1/logs?query=kubelet&tailLines=1&format=text');
  t.match(txt.body, /^\d{4}-.*Z kubelet\[702\]: I\d{4} /);
});

t.test('/v1/logs: a file under /var/log, and no way out', async (t) => {
  const r = await get('/v1/logs?query=/var/log/apt/history.log&tailLines=2');
  t.equal(r.statusCode, 200, r.body);
  t.same(r.json().lines, ['Commandline: apt-get install containerd', 'End-Date: 2026-11-29']);
  t.equal((await get('/v1/logs?query=apt/history.log&pattern=COMMAND')).json().lines.length, 0, 'a capital makes it case-sensitive');
  for (const q of ['../etc/shadow', '/var/log/../../etc/shadow', 'apt/../../../etc/shadow']) {
    const bad = await get(`/v1/logs?query=${encodeURIComponent(q)}`);
    t.equal(bad.statusCode, 400, q);
    t.notMatch(bad.body, /SECRET/);
  }
  const link = await get('/v1/logs?query=/var/log/escape.log');
  t.not(link.statusCode, 200, 'a symlink out of /var/log is not followed as the last step');
  t.notMatch(link.body, /SECRET/);
  t.equal((await get('/v1/logs?query=nosuch/file.log')).statusCode, 404);
});

t.test('/v1/logs: bad inputs are 4xx', async (t) => {
  const cases = [
    'query=kube%20let',
    'query=-u%20x',
    'query=--output=json',
    'query=a.b.',
    'query=..',
    'query=a&query=b&query=c&query=d&query=e',
    'pattern=--output=json',
    'pattern=-u%20x',
    'pattern=(',
    'pattern=%5Bz-a%5D',
    'tailLines=100001',
    'tailLines=99999999999',
    'tailLines=-1',
    'tailLines=abc',
    'sinceTime=2026-11-29T17:00:00Z&untilTime=2026-11-29T16:00:00Z',
    'sinceTime=yesterday',
    'boot=1',
    'priority=loud',
    'nosuchparam=1',
  ];
  for (const c of cases) {
    const r = await get(`/v1/logs?${c}`);
    t.ok(r.statusCode >= 400 && r.statusCode < 500, `${c} → ${r.statusCode}`);
    t.match(r.headers['content-type'], /problem\+json/);
  }
  t.equal((await get('/v1/logs?boot=-9')).statusCode, 404);
});

t.test('/v1/kernel from a kmsg file', async (t) => {
  const r = await get('/v1/kernel?tailLines=2');
  t.equal(r.statusCode, 200, r.body);
  t.same(r.json().records.map((x: { seq: number }) => x.seq), [624, 625]);
  const p = await get('/v1/kernel?pattern=invoked%20oom-killer');
  t.equal(p.json().records.length, 2);
  t.equal((await get('/v1/kernel?sinceSeq=620&tailLines=1')).json().records[0].seq, 625);
  for (const c of ['pattern=(', 'tailLines=100001', 'sinceSeq=-1', 'sinceSeq=x']) t.equal((await get(`/v1/kernel?${c}`)).statusCode, 400, c);
});

t.test('/v1/oom: kills attributed, memory.events of live cgroups, runtime down', async (t) => {
  const r = await get('/v1/oom');
  t.equal(r.statusCode, 200, r.body);
  const body = r.json();
  t.equal(body.kills.length, 2);
  t.match(body.kills[0], { pid: 916, process: 'dd', podUid: POD_UID, containerId: OOM_CHILD_ID, qos: 'burstable', podName: null, evidence: { firstSeq: 514, lastSeq: 568, cursor: /^s=/ } });
  t.match(body.runtime, { joined: false });
  t.match(body.memoryEvents.find((e: { podUid: string; containerId: string | null }) => e.podUid === POD_UID && e.containerId === null), { events: { oomKill: 2 } });
  const txt = await get('/v1/oom?format=text');
  t.match(txt.body, /PID\s+PROCESS/);
});

t.test('/v1/containers/{id}/logs with no runtime: found through /var/log/containers', async (t) => {
  const r = await get(`/v1/containers/${LOG_CONTAINER_ID.slice(0, 8)}/logs?tailLines=2`);
  t.equal(r.statusCode, 200, r.body);
  t.match(r.json(), { containerId: LOG_CONTAINER_ID, via: 'var-log-containers', attempt: 1 });
  t.same(r.json().entries.map((e: { message: string }) => e.message), ['', 'ünïcödé ✓ and a tab\there']);
  const prev = await get(`/v1/containers/${LOG_CONTAINER_ID}/logs?previous=true&format=text&timestamps=true`);
  t.match(prev.body, /^2026-11-29T17:00:01\.123456789Z attempt 0 started\n/);
  t.equal((await get(`/v1/containers/${LOG_CONTAINER_ID}/logs?tailLines=100001`)).statusCode, 400);
  t.equal((await get(`/v1/containers/${LOG_CONTAINER_ID}/logs?stream=stdin`)).statusCode, 400);
  t.equal((await get(`/v1/containers/${LOG_CONTAINER_ID}/logs?sinceTime=x`)).statusCode, 400);
  t.equal((await get('/v1/containers/abcdef/logs')).statusCode, 404);
  t.equal((await get('/v1/containers/ZZ/logs')).statusCode, 400);
  t.equal((await get('/v1/containers/af592112/logs')).statusCode, 404, 'a link whose file is gone');
});

// ---- follow ---------------------------------------------------------------

const address = await ta.app.listen({ host: '127.0.0.1', port: 0 });

/** open a follow stream, wait for its first bytes, then hang up */
function followOnce(url: string, headers: Record<string, string> = {}): Promise<{ status: number; first: string; pids: number[] }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${address}${url}`, { headers }, (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, first: body, pids: [] }));
        return;
      }
      res.once('data', (d: Buffer) => {
        const pids = [...ta.deps.journal.live];
        req.destroy();
        resolve({ status: 200, first: d.toString('utf8'), pids });
      });
    });
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
  });
}


t.test('follow: NDJSON and SSE, 100 disconnects leave no journalctl behind', async (t) => {
  const sse = await followOnce('/v1/logs?query=kubelet&follow=true&tailLines=1', { accept: 'text/event-stream' });
  t.match(sse.first, /^: nodetruth follow/);
  const pids = new Set<number>();
  for (let i = 0; i < 100; i++) {
    const r = await followOnce('/v1/logs?query=kubelet&follow=true&tailLines=1');
    if (r.status !== 200) {
      t.fail(`follow ${i}: ${r.status} ${r.first}`);
      break;
    }
    if (i === 0) t.match(JSON.parse(r.first.split('\n')[0]!), { unit: 'kubelet.service' });
    for (const p of r.pids) pids.add(p);
  }
  t.ok(pids.size >= 100, `${pids.size} journalctl children seen`);
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && ([...pids].some(alive) || ta.deps.journal.live.size > 0)) await new Promise((r) => setTimeout(r, 20));
  t.same([...pids].filter(alive), [], 'every journalctl child is gone');
  t.equal(ta.deps.journal.live.size, 0);
});

t.test('follow: at most --max-follows streams, across kinds; 429 beyond', async (t) => {
  const open: http.ClientRequest[] = [];
  const start = (url: string) =>
    new Promise<number>((resolve) => {
      const req = http.get(`${address}${url}`, (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      });
      req.on('error', () => {});
      open.push(req);
    });
  t.equal(await start('/v1/logs?follow=true&tailLines=0'), 200);
  t.equal(await start('/v1/kernel?follow=true&tailLines=0'), 200);
  t.equal(await start('/v1/logs?follow=true&query=kubelet&tailLines=0'), 200);
  t.equal(await start('/v1/kernel?follow=true'), 429);
  for (const r of open) r.destroy();
  const deadline = Date.now() + 3000;
  let code = 0;
  while (Date.now() < deadline && (code = await start('/v1/kernel?follow=true&tailLines=0')) !== 200) await new Promise((r) => setTimeout(r, 50));
  t.equal(code, 200, 'slots come back after disconnects');
  for (const r of open) r.destroy();
  t.equal((await get('/v1/logs?follow=true&pattern=(')).statusCode, 400, 'a bad pattern is refused before the stream starts');
});
