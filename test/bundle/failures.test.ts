/**
 * A capture with sources down completes, and its manifest names the failed
 * sections: the FAKE runtime wedged (FakeCriServer delayMs beyond --cri-timeout)
 * and journalctl missing (--journalctl /nonexistent). Then GET /v1/bundle over
 * real HTTP (streamed, gzip), and the size budget: sections trimmed in the stated
 * order (container log tails first, route answers last), the manifest says which.
 */
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { captureBundle } from '../../src/bundle/capture.js';
import { readBundle } from '../../src/bundle/read.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const host = await makeFakeScaleHost({ pods: 3, perPod: 2, journal: true, logLines: 400 });
const cri = new FakeCriServer(host.node);
await cri.start();
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-fail-'));
t.teardown(async () => {
  await cri.stop();
  host.cleanup();
  rmSync(dir, { recursive: true, force: true });
});
const base = ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz'];

t.test('runtime wedged and journalctl missing: the capture completes and names what failed', async (t) => {
  cri.delayMs = 1500; // beyond the 300 ms deadline: every CRI call answers DEADLINE_EXCEEDED
  t.teardown(() => void (cri.delayMs = 0));
  const a = await testApp([...base, '--cri-timeout', '300ms', '--journalctl', '/nonexistent']);
  t.teardown(() => a.close());
  const file = path.join(dir, 'wedged.tar.gz');
  const m = await captureBundle({ app: a.app, deps: a.deps, throttlingWindow: '1s' }, createWriteStream(file));
  const failed = m.sections.filter((s) => s.error !== undefined);
  const cri504 = m.sections.filter((s) => s.kind === 'cri');
  t.equal(cri504.length, 6);
  for (const s of cri504) t.match(s.error, /did not answer|deadline/i, `CRI ${s.name}: ${s.error}`);
  const journal = m.sections.find((s) => s.kind === 'journal')!;
  t.match(journal.error, /nonexistent/, `journal: ${journal.error}`);
  t.same(journal.source.argv!.slice(0, 2), ['/nonexistent', `--root=${host.root}`], 'the argv journalctl would have run');
  const pods = m.sections.find((s) => s.name === '/v1/pods')!;
  t.equal(pods.status, 504, '/v1/pods stored as the API answered it: 504');
  // the cgroup side still stands: processes of every running container, through its cgroup
  const procs = m.sections.filter((s) => /^\/v1\/containers\/[0-9a-f]{64}\/processes$/.test(s.name));
  t.ok(procs.length > 0 && procs.every((s) => s.status === 200), `${procs.length} processes answers (200) with the runtime wedged`);
  t.ok(m.sections.find((s) => s.kind === 'cgroup')!.files! > 0, 'cgroup files captured');
  t.ok(m.sections.find((s) => s.kind === 'podlog')!.files! > 0, 'log tails found through /var/log/containers');
  t.comment(`${failed.length} sections failed: ${failed.map((s) => s.kind).join(' ')}`);
  const b = await readBundle(file);
  t.same(b.manifest.sections.filter((s) => s.error !== undefined).length, failed.length, 'and the file says so');
});

t.test('GET /v1/bundle streams a gzip bundle over real HTTP, one capture at a time', async (t) => {
  const a = await testApp(base);
  t.teardown(() => a.close());
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (a.app.server.address() as { port: number }).port;
  const [res, second] = await Promise.all([
    fetch(`http://127.0.0.1:${port}/v1/bundle?since=2h`),
    new Promise<Response>((resolve) => setTimeout(() => resolve(fetch(`http://127.0.0.1:${port}/v1/bundle`)), 300)),
  ]);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/gzip');
  t.match(res.headers.get('content-disposition'), /attachment; filename="nodetruth-.*\.tar\.gz"/);
  t.equal(second.status, 429, 'a second capture while one runs');
  await second.arrayBuffer();
  const file = path.join(dir, 'http.tar.gz');
  await writeFile(file, Buffer.from(await res.arrayBuffer()));
  const b = await readBundle(file);
  t.ok(b.routes.has('/v1/containers'));
  t.ok(b.manifest.argv[1]!.startsWith('/v1/bundle'), 'argv: the request');
  const bad = await fetch(`http://127.0.0.1:${port}/v1/bundle?maxSize=1`);
  t.equal(bad.status, 400);
  t.match(((await bad.json()) as { detail: string }).detail, /maxSize must be a size/);
});

t.test('the size budget: log tails go first, then the journal, then cgroup files; route answers last', async (t) => {
  const a = await testApp(base);
  t.teardown(() => a.close());
  const full = await captureBundle({ app: a.app, deps: a.deps }, createWriteStream(path.join(dir, 'full.tar.gz')));
  const routeBytes = full.sections.filter((s) => s.kind !== 'podlog' && s.kind !== 'journal' && s.kind !== 'cgroup').reduce((n, s) => n + s.bytes + 1024, 0);
  t.comment(`full capture: ${full.bytes} bytes uncompressed, routes and small raw sections ${routeBytes}`);
  // room for everything but the log tails, with the manifest's reserve (an eighth) on top
  const budget = Math.ceil((full.bytes - full.sections.find((s) => s.kind === 'podlog')!.bytes / 2) * 8 / 7);
  const file = path.join(dir, 'small.tar.gz');
  const m = await captureBundle({ app: a.app, deps: a.deps, maxBytes: budget }, createWriteStream(file));
  t.ok(m.trimmed.includes('podlog'), `trimmed: ${m.trimmed.join(',')}`);
  t.notOk(m.trimmed.includes('route'), 'no route answer lost');
  t.ok(m.bytes <= budget, `${m.bytes} <= ${budget}`);
  t.equal(m.sections.find((s) => s.kind === 'podlog')!.trimmed, 'over the size budget');
  const tiny = await captureBundle({ app: a.app, deps: a.deps, maxBytes: 200 * 1024 }, createWriteStream(path.join(dir, 'tiny.tar.gz')));
  t.same(tiny.trimOrder, ['podlog', 'journal', 'cgroup', 'kmsg', 'cri', 'route']);
  t.ok(tiny.trimmed.includes('route') && tiny.trimmed.includes('podlog'), `tiny: trimmed ${tiny.trimmed.join(',')}`);
  t.ok(gunzipSync((await import('node:fs')).readFileSync(path.join(dir, 'tiny.tar.gz'))).length <= 200 * 1024 + 1024 + 64 * 1024, 'within the budget (plus the manifest and the end blocks)');
});

t.test('an attach session\'s GET /v1/bundle: the capture\'s own requests carry the session token, so its routes answer', async (t) => {
  const token = 'S'.repeat(43);
  const a = await testApp(base, { NODETRUTH_SESSION_TOKEN: token });
  t.teardown(() => a.close());
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (a.app.server.address() as { port: number }).port;
  const res = await fetch(`http://127.0.0.1:${port}/v1/bundle`, { headers: { 'x-nodetruth-session': token } });
  t.equal(res.status, 200);
  const file = path.join(dir, 'session.tar.gz');
  const bytes = Buffer.from(await res.arrayBuffer());
  await writeFile(file, bytes);
  t.notOk(gunzipSync(bytes).includes(token), 'the token is stored nowhere in the bundle');
  const b = await readBundle(file);
  const routes = b.manifest.sections.filter((s) => s.kind === 'route');
  t.ok(routes.length > 5, `${routes.length} route answers`);
  t.same(routes.filter((s) => s.status === 401).map((s) => s.name), [], 'none refused by the session check');
  t.ok(b.routes.has('/v1/oom') && b.routes.has('/v1/containers'), '/v1/oom and /v1/containers stored');
});
