/**
 * Round trip on the FAKE node (test/fixtures/fake-node.ts; not a real node): a capture
 * through the real app, then `serve --bundle` over that file. For every read route the
 * capture took, the answer served from the bundle (status, content type, body byte for
 * byte, ?format=text included) equals the answer the live agent gave at capture time,
 * as recorded by an onSend hook on the live app itself (independent of what the
 * capture chose to store). Also: no secret of the fake node is anywhere in the
 * archive (raw evidence included), the manifest counts redactions, follow and a new
 * throttling window answer 409, /readyz names the bundle, prefixes resolve.
 */
import { mkdtempSync, readFileSync, rmSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { createLogger } from '../../src/agent.js';
import { closeSources, createSources } from '../../src/sources.js';
import { captureBundle } from '../../src/bundle/capture.js';
import { readBundle } from '../../src/bundle/read.js';
import { buildBundleApp } from '../../src/bundle/serve.js';
import { triageBundleMain } from '../../src/bundle/cli.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/server/app.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const host = await makeFakeScaleHost({ pods: 4, perPod: 2, journal: true, logLines: 20 });
const cri = new FakeCriServer(host.node);
await cri.start();
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-test-'));
t.teardown(async () => {
  await cri.stop();
  host.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
const flags = ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'fake-node'];
const { config } = loadConfig(flags, {});
const shutdown = new AbortController();
const deps = createSources(config, createLogger({ logLevel: 'silent' }, sink()));
const live = await buildApp(deps, { shutdown: shutdown.signal, tls: null });
// what the live agent answered, per URL, at capture time
const seen = new Map<string, { status: number; contentType: string; body: Buffer }>();
live.addHook('onSend', async (req, reply, payload) => {
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
    seen.set(req.url, { status: reply.statusCode, contentType: String(reply.getHeader('content-type') ?? ''), body: Buffer.from(payload) });
  }
  return payload;
});
await live.ready();
const file = path.join(dir, 'fake.tar.gz');
const manifest = await captureBundle({ app: live, deps, sinceMs: 3600_000 * 24 * 365 * 10, argv: ['nodetruth', 'capture'] }, createWriteStream(file));
shutdown.abort();
await live.close();
closeSources(deps);

const bundle = await readBundle(file);
const { config: bcfg } = loadConfig(['--node-name', 'elsewhere'], {});
const bdeps = { ...createSources({ ...bcfg, criEndpoint: null }, createLogger({ logLevel: 'silent' }, sink())), shutdown: new AbortController().signal };
const served = await buildBundleApp(bundle, bdeps);
await served.ready();
t.teardown(() => served.close());

t.test('the manifest names every section, its source and size', async (t) => {
  t.equal(manifest.node, 'fake-node');
  t.equal(manifest.kind, 'nodetruth-bundle');
  const kinds = new Set(manifest.sections.map((s) => s.kind));
  for (const k of ['route', 'cri', 'kmsg', 'cgroup', 'journal', 'podlog']) t.ok(kinds.has(k as never), `section ${k}`);
  t.same(manifest.sections.filter((s) => s.error !== undefined).map((s) => s.name).filter((n) => !n.startsWith('/')), [], 'no raw section failed');
  t.ok(manifest.sections.find((s) => s.kind === 'journal')!.source.argv!.some((a) => a === '--output=export'), 'journalctl argv recorded');
  t.ok(manifest.sections.find((s) => s.kind === 'cgroup')!.files! > 10, 'cgroup files stored');
  t.ok(manifest.sections.find((s) => s.kind === 'podlog')!.files! >= 8, 'a log tail per container');
  t.ok(manifest.redaction.total > 0, `redactions counted (${manifest.redaction.total})`);
  t.same(manifest.trimmed, []);
});

t.test('every captured route answers from the bundle exactly as the live agent did', async (t) => {
  // /healthz and /readyz are the bundle server's own (they say it serves a bundle); all else is replayed
  const own = new Set(['/healthz', '/readyz', '/readyz?format=text']);
  const routes = manifest.sections.filter((s) => s.kind === 'route' && !own.has(s.name));
  t.ok(routes.length > 60, `${routes.length} route answers captured`);
  for (const r of ['/v1/pods', '/v1/containers?format=text', '/v1/triage', '/metrics', '/v1/throttling?window=1s', '/v1/oom', '/v1/node']) t.ok(routes.some((s) => s.name === r), `captured ${r}`);
  let compared = 0;
  for (const s of routes) {
    const want = seen.get(s.name);
    t.ok(want, `the live agent answered ${s.name}`);
    if (!want) continue;
    const got = await served.inject({ method: 'GET', url: s.name, headers: { host: '127.0.0.1' } });
    if (got.statusCode !== want.status || !got.rawPayload.equals(want.body) || got.headers['content-type'] !== want.contentType) {
      t.fail(`${s.name}: served ${got.statusCode} ${got.headers['content-type']} differs from live ${want.status} ${want.contentType}`);
    } else compared++;
  }
  t.equal(compared, routes.length, `${compared} answers byte-identical`);
  // Accept: text/plain is ?format=text, as on the live agent
  const acc = await served.inject({ url: '/v1/pods', headers: { host: '127.0.0.1', accept: 'text/plain' } });
  t.ok(acc.rawPayload.equals(seen.get('/v1/pods?format=text')!.body));
});

t.test('no secret of the fake node is in the archive, raw evidence included', async (t) => {
  const all = gunzipSync(readFileSync(file)).toString('latin1');
  for (const s of host.secrets) t.notOk(all.includes(s), `no ${s.slice(0, 16)}…`);
});

t.test('live-only requests answer 409 saying this is a bundle; readyz names it', async (t) => {
  const id = host.node.containers[0]!.id;
  for (const url of ['/v1/logs?follow=true', `/v1/containers/${id}/logs?follow=true`, '/v1/throttling', '/v1/throttling?window=5s', '/v1/bundle', '/v1/pods?namespace=x']) {
    const r = await served.inject({ url, headers: { host: '127.0.0.1' } });
    t.equal(r.statusCode, 409, url);
    t.match(r.headers['content-type'], /problem\+json/);
    t.match(r.json().detail, new RegExp(`bundle of node fake-node captured at ${manifest.capturedAt}`));
  }
  const ready = await served.inject({ url: '/readyz', headers: { host: '127.0.0.1' } });
  t.match(ready.json(), { status: 'ready', bundle: { node: 'fake-node', capturedAt: manifest.capturedAt, version: manifest.version } });
  const text = await served.inject({ url: '/readyz?format=text', headers: { host: '127.0.0.1' } });
  t.match(text.body, /serving a BUNDLE, not a live node/);
  const bad = await served.inject({ url: '/v1/nothing', headers: { host: '127.0.0.1' } });
  t.equal(bad.statusCode, 404);
  const rebinding = await served.inject({ url: '/v1/pods', headers: { host: 'evil.example' } });
  t.equal(rebinding.statusCode, 421, 'the host check stands in front of a bundle too');
  // a unique prefix resolves as on the live agent
  const full = await served.inject({ url: `/v1/containers/${id}`, headers: { host: '127.0.0.1' } });
  const pre = await served.inject({ url: `/v1/containers/${id.slice(0, 12)}`, headers: { host: '127.0.0.1' } });
  t.equal(pre.statusCode, full.statusCode);
  t.ok(pre.rawPayload.equals(full.rawPayload));
});

t.test('triage --bundle prints the stored report', async (t) => {
  let out = '';
  let err = '';
  const code = await triageBundleMain(['--bundle', file], { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, env: {} });
  t.equal(out, seen.get('/v1/triage?format=text')!.body.toString('utf8'), 'identical to the captured text report');
  t.match(err, /stored \/v1\/triage answer, not re-run/);
  const verdict = (JSON.parse(seen.get('/v1/triage')!.body.toString('utf8')) as { verdict: string }).verdict;
  t.equal(code, { ok: 0, warning: 1, critical: 2 }[verdict]);
});
