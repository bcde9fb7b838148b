/**
 * A capture is one reading (src/reading.ts): its injected requests share the
 * source reads they repeat, so its cost is linear in the node, every answer states the
 * capture's start as its observedAt, and it is audited as one request.
 *
 * - The FAKE runtime counts the calls it is asked: one capture of a node lists the
 *   containers and sandboxes a fixed number of times, however many containers there
 *   are (without one reading each per-container route lists again: O(containers²)); each
 *   container's status is asked a fixed number of times.
 * - The kubepods walk (its first step, the listing of /sys/fs/cgroup for the kubepods roots,
 *   counted on the real HostFs, calling through) is made a fixed number of times per capture.
 * - Nothing outlives the reading: a container the runtime lists after the capture
 *   is in the next answer.
 * - GET /v1/bundle over real HTTP writes ONE audit line, with the count of inner
 *   answers and the bytes; a request from a client during the capture, carrying
 *   headers that try to pass for an inner one, is audited as usual.
 */
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { captureBundle } from '../../src/bundle/capture.js';
import { CGROUP_MOUNT } from '../../src/readers/cgroup/cgroups.js';
import { routeKey } from '../../src/bundle/format.js';
import { readBundle } from '../../src/bundle/read.js';
import type { ResolvedDir } from '../../src/readers/hostfs/hostfs.js';
import { Reading } from '../../src/reading.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-moment-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

async function fakeNode(pods: number, perPod: number) {
  const host = await makeFakeScaleHost({ pods, perPod, journal: false, logLines: 5 });
  const cri = new FakeCriServer(host.node);
  await cri.start();
  const a = await testApp(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--journalctl', '/nonexistent']);
  // the walk's first step, counted on the real HostFs (the call goes through): the listing of the
  // cgroup mount for the kubepods roots (the cgroups below are listed without HostFs.readdir)
  let walks = 0;
  const readdir = a.deps.hostFs.readdir.bind(a.deps.hostFs);
  a.deps.hostFs.readdir = ((d: ResolvedDir, ...rest: unknown[]) => {
    if (d.hostPath === CGROUP_MOUNT) walks++;
    return (readdir as (...args: unknown[]) => ReturnType<typeof readdir>)(d, ...rest);
  }) as typeof readdir;
  return {
    host,
    cri,
    a,
    walks: () => walks,
    async close() {
      await a.close();
      await cri.stop();
      host.cleanup();
    },
  };
}

async function countedCapture(pods: number, perPod: number) {
  const n = await fakeNode(pods, perPod);
  for (const k of Object.keys(n.cri.calls)) delete n.cri.calls[k];
  const walks0 = n.walks();
  const m = await captureBundle({ app: n.a.app, deps: n.a.deps, throttlingWindow: '1s' }, createWriteStream(path.join(dir, `${pods}x${perPod}.tar.gz`)));
  const calls = { ...n.cri.calls };
  const walks = n.walks() - walks0;
  return { n, m, calls, walks, containers: n.host.node.containers.length };
}

t.test('one capture lists the runtime and walks the cgroups a fixed number of times, whatever the size of the node', async (t) => {
  const small = await countedCapture(2, 2);
  t.teardown(() => small.n.close());
  const big = await countedCapture(6, 3);
  t.teardown(() => big.n.close());
  for (const c of [small, big]) {
    const answers = c.m.sections.filter((s) => s.kind === 'route');
    t.comment(`${c.containers} containers: ${answers.length} answers; CRI calls ${JSON.stringify(c.calls)}; kubepods walks ${c.walks}`);
    // what a count that differs between runs needs to be explained: the answers that were not a plain 200 or 404
    t.comment(`${c.containers} containers: answers not 200/404: ${answers.filter((s) => s.status !== 200 && s.status !== 404).slice(0, 20).map((s) => `${s.status ?? s.error ?? s.trimmed} ${s.name} (${s.ms} ms)`).join(', ') || 'none'}`);
    t.ok(answers.length > 8 * c.containers, `${answers.length} answers, ~10 per container`);
    const perItem = answers.filter((s) => /^\/v1\/(containers|pods)\/[0-9a-f]{64}/.test(s.name));
    t.ok(perItem.length >= 8 * c.containers, `${perItem.length} per-pod and per-container answers`);
    t.ok((c.calls.ListContainers ?? 0) >= 1 && (c.calls.ListContainers ?? 0) <= 2, `ListContainers ${c.calls.ListContainers}: once for the reading (without it, once per answer that names a container)`);
    t.ok((c.calls.ListPodSandbox ?? 0) >= 1 && (c.calls.ListPodSandbox ?? 0) <= 2, `ListPodSandbox ${c.calls.ListPodSandbox}`);
    // per container: one plain status shared by every answer that lists it, a verbose one for each inspect answer
    // (json, text) and the logs route's own (json, text): a fixed number, not one per answer that names the container
    t.ok((c.calls.ContainerStatus ?? 0) <= 5 * c.containers, `ContainerStatus ${c.calls.ContainerStatus} for ${c.containers} containers`);
    t.ok(c.m.moment?.includes('one moment'), 'the manifest says the bundle is one moment');
    t.ok(Date.parse(c.m.capturedAt) <= Date.parse(c.m.finishedAt), 'taken between capturedAt and finishedAt');
  }
  t.equal(big.calls.ListContainers, small.calls.ListContainers, 'as many lists for 18 containers as for 4');
  t.equal(big.calls.ContainerStatus! / big.containers, small.calls.ContainerStatus! / small.containers, 'as many status calls per container on either node');
  // the reading's walk, the throttling samples' and triage's own, and one per pod (its /v1/pods/{id} answers read that pod alone)
  t.equal(big.walks - small.walks, 6 - 2, `kubepods walks: ${small.walks} for 2 pods, ${big.walks} for 6: one more per pod, not one per answer`);
  t.equal(Reading.current(), undefined, 'no reading left open here');

  // the answers are still the routes' own: asked again now, from a reading of their own, each gives the same
  // status and body but for when it was observed; every stored answer was observed when the capture began
  const b = await readBundle(path.join(dir, '6x3.tar.gz'));
  const unobserved = (body: Buffer) => body.toString('utf8').replace(/"observedAt":"[^"]*",?/, '');
  let same = 0;
  const differ: string[] = [];
  const observed = new Set<string>();
  for (const s of big.m.sections.filter((x) => x.kind === 'route' && /^\/v1\/(containers|pods)\/[0-9a-f]{64}/.test(x.name))) {
    const res = await big.n.a.app.inject({ url: s.name, headers: { host: '127.0.0.1' } });
    const stored = b.routes.get(routeKey(s.name))!;
    const at = /"observedAt":"([^"]*)"/.exec(stored.body.toString('utf8'))?.[1];
    if (at) observed.add(at);
    if (res.statusCode === stored.status && unobserved(res.rawPayload) === unobserved(stored.body)) same++;
    else differ.push(`${s.name}: ${stored.status} then ${res.statusCode}`);
  }
  t.same(differ, [], `${same} per-pod and per-container answers identical when asked again outside the capture (404s included: exited containers without a cgroup)`);
  t.same([...observed], [big.m.capturedAt], 'every stored answer observed when the capture began');
});

t.test("the runtime's routes are taken first and alone, then the rest beside each other", async (t) => {
  const c = await countedCapture(2, 2);
  t.teardown(() => c.n.close());
  // sections are recorded as they start: the three after the spec started one after another,
  // each once the one before it had answered (a slow node's agent otherwise answers them past
  // the CRI deadline while every other route runs beside them)
  const names = c.m.sections.filter((s) => s.kind === 'route').map((s) => s.name);
  t.same(names.slice(0, 4).sort(), ['/openapi.json', '/v1/containers', '/v1/pods', '/v1/runtime'], `the first route sections: ${names.slice(0, 6).join(', ')}`);
  const first = c.m.sections.filter((s) => ['/v1/runtime', '/v1/pods', '/v1/containers'].includes(s.name));
  t.same(first.map((s) => s.status), [200, 200, 200], 'each answered 200');
  t.ok(names.includes('/v1/runtime?format=text') && names.indexOf('/v1/runtime?format=text') > 3, 'their text forms come with the rest');
});

t.test('nothing outlives the reading: after a capture every answer reads the node again', async (t) => {
  const n = await fakeNode(2, 2);
  t.teardown(() => n.close());
  await captureBundle({ app: n.a.app, deps: n.a.deps, throttlingWindow: '1s' }, createWriteStream(path.join(dir, 'after.tar.gz')));
  const before = n.cri.calls.ListContainers ?? 0;
  // the runtime removes a container after the capture
  const gone = n.host.node.containers.pop()!;
  const res = await n.a.app.inject({ url: '/v1/containers', headers: { host: '127.0.0.1' } });
  t.equal(res.statusCode, 200);
  const ids = (res.json() as { items: { id: string }[] }).items.map((c) => c.id);
  t.equal(ids.length, n.host.node.containers.length);
  t.notOk(ids.includes(gone.id), 'the container removed after the capture is not in the next answer');
  t.equal(n.cri.calls.ListContainers, before + 1, 'listed again');
});

t.test('GET /v1/bundle is one audit line with the count of its inner answers; a client request during it is audited', async (t) => {
  const n = await fakeNode(2, 2);
  t.teardown(() => n.close());
  await n.a.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (n.a.app.server.address() as { port: number }).port;
  n.a.logs.length = 0;
  const bundle = fetch(`http://127.0.0.1:${port}/v1/bundle`).then(async (r) => ({ status: r.status, body: Buffer.from(await r.arrayBuffer()) }));
  // while the capture runs: a client's request, with headers an inner request might be thought to carry
  await new Promise((r) => setTimeout(r, 200));
  const during = await fetch(`http://127.0.0.1:${port}/v1/runtime`, { headers: { 'x-nodetruth-inner': '1', 'x-nodetruth-capture': '1', via: 'nodetruth-capture' } });
  t.equal(during.status, 200);
  await during.arrayBuffer();
  const got = await bundle;
  t.equal(got.status, 200);
  const file = path.join(dir, 'http.tar.gz');
  (await import('node:fs')).writeFileSync(file, got.body);
  const b = await readBundle(file);
  const answers = b.manifest.sections.filter((s) => s.kind === 'route');
  // the audit line is written when the response closes: wait for it (up to 10 s: a loaded machine)
  for (let i = 0; i < 500 && n.a.logs.filter((l) => l.audit).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  const audit = n.a.logs.filter((l) => l.audit).map((l) => l.audit as Record<string, unknown>);
  t.same(audit.map((l) => l.route).sort(), ['/v1/bundle', '/v1/runtime'], `two audit lines, not ${answers.length + 2}: ${audit.length}`);
  const line = audit.find((l) => l.route === '/v1/bundle')!;
  const capture = line.capture as Record<string, number>;
  t.equal(capture.answers, answers.length, `the inner answers counted: ${capture.answers}`);
  t.equal(capture.answerBytes, answers.reduce((s, x) => s + x.bytes, 0), 'the bytes of the answers stored');
  t.equal(capture.uncompressedBytes, b.manifest.bytes, 'the bundle before gzip');
  t.ok(Number(line.bytes) >= got.body.length, `${line.bytes} bytes sent (the gzip body and the headers)`);
  t.equal(line.status, 200);
  t.equal(line.outcome, 'ok');
});
