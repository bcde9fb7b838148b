/**
 * `nodetruth timeline --bundle FILE`: a real capture of a fixture node (the captured kernel
 * ring, a host btime 700 s before now) replayed and narrowed by the route's own parameters,
 * durations counted back from the capture's time; hostile stored timelines (not JSON, a time
 * that is not one, escape sequences) refused with the reason or shown escaped.
 */
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import t from 'tap';
import { pack, type Header } from 'tar-stream';
import { captureBundle } from '../../src/bundle/capture.js';
import { FORMAT_VERSION, routeEntryName, type Manifest } from '../../src/bundle/format.js';
import { timelineMain, TIMELINE_USAGE_EXIT } from '../../src/cli/timeline.js';
import { formatMicros } from '../../src/readers/journal/time.js';
import type { Timeline } from '../../src/model/timeline.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { testApp } from '../helpers/app.js';

const BTIME = Math.floor(Date.now() / 1000) - 700;
const OOM_POD = 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8';
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-bundle-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(path.join(dir, 'root/proc'), { recursive: true });
writeFileSync(path.join(dir, 'root/proc/stat'), `cpu 1\nbtime ${BTIME}\n`);
const kmsg = path.join(dir, 'kmsg.txt');
writeFileSync(kmsg, readFileSync(kmsgFixture('captured-6.1.0-57-amd64.kmsg'), 'utf8'));

const live = await testApp(['--host-root', path.join(dir, 'root'), '--kmsg-path', kmsg, '--node-name', 'lab-node']);
const file = path.join(dir, 'capture.tar.gz');
await captureBundle({ app: live.app, deps: live.deps, sinceMs: 3600_000, argv: ['nodetruth', 'capture'] }, createWriteStream(file));
await live.close();

const run = async (...args: string[]) => {
  let out = '';
  let err = '';
  // source flags that would read this machine: the replay must not need them
  const code = await timelineMain(['--host-root', '/nonexistent', ...args], { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, env: {} });
  return { code, out, err };
};

t.test('the stored timeline, narrowed like the live one', async (t) => {
  const r = await run('--bundle', file, '--source', 'kernel', '--source', 'oom');
  t.equal(r.code, 0, r.err);
  t.match(r.err, /^nodetruth timeline: a BUNDLE, not a live node: node lab-node captured at /);
  const lines = r.out.trimEnd().split('\n');
  t.match(lines[0], /^TIME\s+SOURCE\s+POD\s+CONTAINER\s+WHAT$/);
  t.ok(lines.some((l) => l.startsWith(`${formatMicros(BTIME * 1e6 + 289_556_638)}   oom `)), r.out);
  t.ok(lines.some((l) => l.startsWith(formatMicros(BTIME * 1e6 + 589_498_029)) && l.includes('kernel-hung-task')));
  t.match(r.out, /# warning: replayed from a capture taken at /);

  const j = await run('--bundle', file, '--json', '--pod', OOM_POD);
  const body = JSON.parse(j.out) as Timeline;
  t.same(body.events.map((e) => e.kind), ['oom-kill'], 'pod');
  t.equal(body.clock.kernel, 'btime');
  t.same(Object.keys(body.sources).sort(), ['journal', 'kernel', 'kube', 'oom', 'runtime']);

  // 2m back from the capture: the OOM kill (411 s before it) is out, the hung tasks (111 s) in
  const recent = JSON.parse((await run('--bundle', file, '--json', '--since', '2m', '--source', 'kernel', '--source', 'oom')).out) as Timeline;
  t.notOk(recent.events.some((e) => e.kind === 'oom-kill'));
  t.ok(recent.events.some((e) => e.kind === 'kernel-hung-task'));
  t.same(Object.keys(recent.sources).sort(), ['kernel', 'oom']);
  const wider = JSON.parse((await run('--bundle', file, '--json', '--since', '3h', '--limit', '1')).out) as Timeline;
  t.equal(wider.events.length, 1);
  t.equal(wider.truncated, true);
  t.ok(wider.warnings.some((w) => /^the capture holds nothing before /.test(w)), wider.warnings.join('\n'));
});

/** A bundle holding one /v1/timeline answer, written as the writer writes one. */
async function bundleWith(name: string, body: string): Promise<string> {
  const out = path.join(dir, `${name}.tar.gz`);
  const p = pack();
  const done = pipeline(p, createGzip(), createWriteStream(out));
  const add = (n: string, b: Buffer) => new Promise<void>((res, rej) => p.entry({ type: 'file', name: n, size: b.length } as Header, b, (e) => (e ? rej(e) : res())));
  const entry = routeEntryName('/v1/timeline', 'application/json', 0);
  await add(entry, Buffer.from(body));
  const manifest: Manifest = {
    kind: 'nodetruth-bundle', formatVersion: FORMAT_VERSION, version: '0.1.0', node: 'hostile', capturedAt: '2026-12-01T00:00:00.000Z', finishedAt: '2026-12-01T00:00:01.000Z',
    argv: ['nodetruth', 'capture'], hostRoot: '/', since: '1h', maxBytes: 64 * 2 ** 20, bytes: body.length, trimOrder: [], trimmed: [],
    redaction: { marker: '<redacted>', total: 0, byKind: {}, policy: '' },
    sections: [{ kind: 'route', name: '/v1/timeline', source: { route: '/v1/timeline' }, path: entry, status: 200, contentType: 'application/json; charset=utf-8', time: '2026-12-01T00:00:00.000Z', ms: 1, bytes: body.length, redacted: 0 }],
  };
  await add('manifest.json', Buffer.from(JSON.stringify(manifest)));
  p.finalize();
  await done;
  return out;
}

const good = (events: unknown[]) => JSON.stringify({
  observedAt: '2026-12-01T00:00:00.000000Z', since: '2026-11-30T23:00:00.000000Z', until: '2026-12-01T00:00:00.000000Z', limit: 500, verbose: false,
  clock: { kernel: 'btime', bootTime: '2026-11-30T22:00:00.000000Z', detail: 'x' }, events, truncated: false, sources: { kernel: { ok: true, events: events.length, ms: 1 } }, warnings: [],
});
const ev = (over: Record<string, unknown> = {}) => ({ time: '2026-11-30T23:30:00.000000Z', source: 'kernel', kind: 'kernel-hung-task', severity: 'warning', summary: 'x', evidence: [{ source: 'kmsg', seq: 1, excerpt: 'x' }], ...over });

t.test('hostile stored timelines: refused with the reason, or shown escaped', async (t) => {
  for (const [name, body, why] of [
    ['not-json', '{"events": [', /refused: the stored \/v1\/timeline answer is not JSON/],
    ['odd-time', good([ev({ time: 'yesterday' })]), /not a timeline \(events\.0\.time: not an RFC 3339 time\)/],
    ['odd-source', good([ev({ source: 'shell' })]), /not a timeline \(events\.0\.source: /],
    ['too-many', good(Array.from({ length: 5001 }, () => ev())), /not a timeline \(events: /],
  ] as const) {
    const r = await run('--bundle', await bundleWith(name, body));
    t.equal(r.code, TIMELINE_USAGE_EXIT, name);
    t.match(r.err, why, r.err);
    t.equal(r.out, '', `${name}: nothing printed`);
  }
  const evil = await run('--bundle', await bundleWith('evil', good([ev({ summary: 'pwned\x1b]0;title\x07\x1b[2J' })])), '--since', '2h');
  t.equal(evil.code, 0, evil.err);
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f]/.test(evil.out), 'no control character reaches the terminal');
  t.match(evil.out, /pwned\\x1b\]0;title\\x07/);
  const none = await run('--bundle', path.join(dir, 'nope.tar.gz'));
  t.equal(none.code, TIMELINE_USAGE_EXIT);
  t.match(none.err, /--bundle: cannot read .*nope\.tar\.gz: ENOENT/);
});

t.test('serve --bundle: /v1/timeline with parameters the capture did not store, narrowed', async (t) => {
  const { readBundle } = await import('../../src/bundle/read.js');
  const { buildBundleApp } = await import('../../src/bundle/serve.js');
  const { createSources } = await import('../../src/sources.js');
  const { createLogger } = await import('../../src/agent.js');
  const { loadConfig } = await import('../../src/config.js');
  const { Writable } = await import('node:stream');
  const { config } = loadConfig(['--node-name', 'elsewhere', '--host-root', '/nonexistent'], {});
  const log = createLogger({ logLevel: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() }));
  const served = await buildBundleApp(await readBundle(file), { ...createSources({ ...config, criEndpoint: null }, log), shutdown: new AbortController().signal });
  await served.ready();
  t.teardown(() => served.close());
  const get = (url: string) => served.inject({ method: 'GET', url, headers: { host: '127.0.0.1' } });
  const stored = await get('/v1/timeline');
  t.equal(stored.statusCode, 200, 'the stored answer as captured');
  const pod = await get(`/v1/timeline?pod=${OOM_POD}&source=oom`);
  t.equal(pod.statusCode, 200, pod.body);
  const body = pod.json() as Timeline;
  t.same(body.events.map((e) => e.kind), ['oom-kill']);
  t.match(body.warnings[0], /^replayed from a capture taken at /);
  const text = await get('/v1/timeline?since=2m&format=text&source=kernel');
  t.match(text.headers['content-type'], /^text\/plain/);
  t.match(text.body, /kernel-hung-task/);
  t.notMatch(text.body, /oom-kill/, '2m back from the capture\'s end');
  const bad = await get('/v1/timeline?since=yesterday&pod=x');
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { code: 'bad_parameter', param: 'since' });
  t.equal((await get('/v1/timeline?follow=true')).statusCode, 409, 'a follow stream still needs the live node');
});
