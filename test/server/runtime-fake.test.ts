/**
 * Runtime routes against the FAKE CRI server, for what a read-only containerd
 * cannot show here: running and exited containers, attempts, exit codes, ID
 * prefixes that collide, and verbose info whose env holds secrets.
 */
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeCriServer, type FakeNode } from '../helpers/fake-cri.js';
import { realNodeSpec, writeHostRoot } from '../fixtures/node-tree.js';

const NS = 1_000_000_000n;
const now = BigInt(Date.now()) * 1_000_000n;
const POD = 'aaaa0000' + '0'.repeat(56);
const SECRETS = ['hunter2-db-password', 'ghp_secretTokenValue123', 'AKIAEXAMPLESECRETKEY', 's3cr3t-flag-value', 'annot-secret-value'];

const node: FakeNode = {
  pods: [
    { id: POD, name: 'web-0', namespace: 'shop', uid: '7f3c2a10-1111-4222-8333-944455556666', attempt: 0, state: 'SANDBOX_READY', createdAt: now - 600n * NS },
    { id: 'bbbb' + '1'.repeat(60), name: 'gone', namespace: 'shop', uid: '00000000-1111-4222-8333-944455556666', attempt: 1, state: 'SANDBOX_NOTREADY', createdAt: now - 900n * NS },
  ],
  containers: [
    // a crash loop: three exited attempts, then a running fourth
    ...[0, 1, 2].map((a) => ({
      id: `c0ffee0${a}` + 'a'.repeat(56),
      podSandboxId: POD,
      name: 'app',
      attempt: a,
      image: 'docker.io/library/busybox:1.36',
      state: 'CONTAINER_EXITED' as const,
      createdAt: now - BigInt(300 - a * 60) * NS,
      startedAt: now - BigInt(299 - a * 60) * NS,
      finishedAt: now - BigInt(290 - a * 60) * NS,
      exitCode: 1,
      reason: 'Error',
    })),
    {
      id: 'c0ffee03' + 'a'.repeat(56),
      podSandboxId: POD,
      name: 'app',
      attempt: 3,
      image: 'docker.io/library/busybox:1.36',
      state: 'CONTAINER_RUNNING' as const,
      createdAt: now - 30n * NS,
      startedAt: now - 29n * NS,
      pid: 4242,
      cgroupsPath: 'kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice:cri-containerd:c0ffee03',
      env: { PATH: '/usr/bin', DB_PASSWORD: SECRETS[0]!, GITHUB_TOKEN: SECRETS[1]!, AWS_ACCESS_KEY_ID: SECRETS[2]! },
      args: ['/app', '--password', SECRETS[3]!, '--verbose'],
      annotations: { 'example.com/api-token': SECRETS[4]!, 'io.kubernetes.container.restartCount': '3' },
    },
    {
      id: 'deadbeef' + 'b'.repeat(56),
      podSandboxId: POD,
      name: 'sidecar',
      attempt: 0,
      image: 'registry.k8s.io/pause:3.9',
      state: 'CONTAINER_EXITED' as const,
      createdAt: now - 200n * NS,
      startedAt: now - 199n * NS,
      finishedAt: now - 100n * NS,
      exitCode: 137,
      reason: 'OOMKilled',
    },
  ],
  images: [{ id: `sha256:${'c'.repeat(64)}`, repoTags: ['registry.k8s.io/pause:3.9'], size: 321_000 }],
};

const fake = new FakeCriServer(node);
await fake.start();
// A host root laid out as the captured node: web-0's UID is the captured pod's, so its cgroups are there.
const hostRoot = mkdtempSync(join(tmpdir(), 'nodetruth-runtime-root-'));
writeHostRoot(hostRoot, realNodeSpec('systemd'));
const agent = await testApp(['--cri-endpoint', fake.endpoint, '--cri-timeout', '1500ms', '--host-root', hostRoot]);
t.teardown(async () => {
  await agent.close();
  await fake.stop();
  rmSync(hostRoot, { recursive: true, force: true });
});
const get = (url: string) => agent.app.inject({ method: 'GET', url });

t.test('/v1/containers carries attempts, exit codes, reasons and times', async (t) => {
  const res = await get('/v1/containers');
  t.equal(res.statusCode, 200);
  const items = res.json().items as Record<string, unknown>[];
  t.equal(items.length, 5);
  t.equal(items[0]!.id, 'c0ffee03' + 'a'.repeat(56), 'newest first, as crictl');
  const app = items.filter((c) => c.name === 'app').sort((a, b) => Number(a.attempt) - Number(b.attempt));
  t.same(app.map((c) => [c.attempt, c.state, c.exitCode]), [
    [0, 'CONTAINER_EXITED', 1],
    [1, 'CONTAINER_EXITED', 1],
    [2, 'CONTAINER_EXITED', 1],
    [3, 'CONTAINER_RUNNING', 0],
  ]);
  t.match(app[0], { podName: 'web-0', podNamespace: 'shop', podUid: '7f3c2a10-1111-4222-8333-944455556666', reason: 'Error' });
  t.match(app[0]!.finishedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  t.equal(app[3]!.finishedAt, null, 'a running container has no finish time');
  t.match(items.find((c) => c.name === 'sidecar'), { exitCode: 137, reason: 'OOMKilled' });
});

t.test('filters', async (t) => {
  const ids = async (q: string) => (await get(`/v1/containers?${q}`)).json().items.map((c: { id: string }) => c.id.slice(0, 8));
  t.same(await ids('state=running'), ['c0ffee03']);
  t.same(await ids('state=CONTAINER_RUNNING'), ['c0ffee03'], 'CRI enum names work too');
  t.same(await ids('name=side'), ['deadbeef']);
  t.same(await ids('namespace=other'), []);
  t.same(await ids('pod=aaaa&state=exited&name=side'), ['deadbeef']);
  const pods = await get('/v1/pods?state=notready');
  t.same(pods.json().items.map((p: { name: string }) => p.name), ['gone']);
  t.same((await get('/v1/pods?label=io.kubernetes.pod.name=web-0')).json().items.map((p: { name: string }) => p.name), ['web-0']);
});

t.test('crictl-style text tables', async (t) => {
  const text = (await get('/v1/containers?format=text')).body.split('\n');
  t.match(text[0], /^CONTAINER\s+IMAGE\s+CREATED\s+STATE\s+NAME\s+ATTEMPT\s+POD ID\s+POD\s+NAMESPACE$/);
  t.match(text[1], /^c0ffee03aaaaa\s+docker\.io\/library\/busybox:1\.36\s+\d+ seconds ago\s+Running\s+app\s+3\s+aaaa000000000\s+web-0\s+shop$/);
  const pods = (await get('/v1/pods?format=text')).body.split('\n');
  t.match(pods[0], /^POD ID\s+CREATED\s+STATE\s+NAME\s+NAMESPACE\s+ATTEMPT\s+RUNTIME$/);
  t.match(pods[1], /^aaaa000000000\s+10 minutes ago\s+Ready\s+web-0\s+shop\s+0\s+\(default\)$/);
});

t.test('id prefixes resolve as containerd resolves them', async (t) => {
  const one = await get('/v1/containers/deadb');
  t.equal(one.statusCode, 200);
  t.equal(one.json().id, 'deadbeef' + 'b'.repeat(56));
  const many = await get('/v1/containers/c0ffee0');
  t.equal(many.statusCode, 409);
  t.match(many.json(), { title: 'Ambiguous id prefix', detail: /^4 containers match id prefix c0ffee0/ });
  t.equal(many.json().candidates.length, 4);
  t.equal((await get('/v1/containers/0123')).statusCode, 404);
  const pod = await get('/v1/pods/aaaa');
  t.equal(pod.statusCode, 200);
  t.match(pod.json(), { id: POD, network: { ip: '10.244.0.7' }, namespaceOptions: { network: 'POD', pid: 'CONTAINER' } });
  t.equal(pod.json().containers.length, 5);
  const cgroups = pod.json().cgroups;
  t.equal(cgroups.error, null);
  t.match(cgroups.items[0], { kind: 'pod', podUid: '7f3c2a10-1111-4222-8333-944455556666', qos: 'burstable', driver: 'systemd' });
  t.ok(cgroups.items.length > 1, 'the pod cgroup, then its containers');
});

t.test('container detail: pid, cgroup path, restart history, secrets redacted', async (t) => {
  const res = await get('/v1/containers/c0ffee03');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.pid, 4242);
  t.match(body.cgroupsPath, /^kubepods-burstable-pod7f3c2a10_/);
  t.same(body.restarts.map((r: { attempt: number; exitCode: number }) => [r.attempt, r.exitCode]), [[0, 1], [1, 1], [2, 1], [3, 0]]);
  t.same(body.info.info.runtimeSpec.process.env, ['PATH=<redacted>', 'DB_PASSWORD=<redacted>', 'GITHUB_TOKEN=<redacted>', 'AWS_ACCESS_KEY_ID=<redacted>']);
  t.same(body.info.info.config.envs.map((e: { key: string }) => e.key), ['PATH', 'DB_PASSWORD', 'GITHUB_TOKEN', 'AWS_ACCESS_KEY_ID'], 'env names are kept');
  t.same(body.info.info.runtimeSpec.process.args, ['/app', '--password', '<redacted>', '--verbose']);
  t.equal(body.annotations['io.kubernetes.container.restartCount'], '3');
  for (const url of ['/v1/containers/c0ffee03', '/v1/containers', '/v1/pods/aaaa', '/v1/containers?format=text']) {
    const out = (await get(url)).body;
    for (const s of SECRETS) t.notOk(out.includes(s), `${url} does not leak ${s.slice(0, 6)}…`);
  }
  for (const line of agent.logs) for (const s of SECRETS) t.notOk(JSON.stringify(line).includes(s), 'log does not leak');
});

t.test('a running or exited container\'s status is fetched once while its listed state stays; a change asks again', async (t) => {
  await get('/v1/containers');
  await new Promise((r) => setTimeout(r, 1100)); // past --max-age: the next answer is a reading of its own
  const before = fake.calls.ContainerStatus ?? 0;
  t.equal((await get('/v1/containers')).statusCode, 200);
  t.equal((fake.calls.ContainerStatus ?? 0) - before, 0, 'a new reading, no status asked again');
  const sidecar = node.containers.find((c) => c.name === 'sidecar')!;
  sidecar.state = 'CONTAINER_RUNNING';
  t.teardown(() => void (sidecar.state = 'CONTAINER_EXITED'));
  await new Promise((r) => setTimeout(r, 1100));
  const b2 = fake.calls.ContainerStatus ?? 0;
  await get('/v1/containers');
  t.equal((fake.calls.ContainerStatus ?? 0) - b2, 1, 'only the container whose listed state changed is asked again');
});

t.test('an id route asks only for the statuses it shows, not the whole node\'s', async (t) => {
  const before = fake.calls.ContainerStatus ?? 0;
  t.equal((await get('/v1/containers/deadbeef/logs?tailLines=1')).statusCode !== 500, true);
  const sidecar = await get('/v1/containers/deadbeef');
  t.equal(sidecar.statusCode, 200);
  t.same(sidecar.json().restarts.map((r: { attempt: number }) => r.attempt), [0]);
  t.ok((fake.calls.ContainerStatus ?? 0) - before <= 3, `${(fake.calls.ContainerStatus ?? 0) - before} ContainerStatus calls for two requests about one exited container`);
});

t.test('concurrent identical requests share one computation', async (t) => {
  const before = fake.calls.ListContainers ?? 0;
  const all = await Promise.all(Array.from({ length: 10 }, () => get('/v1/containers')));
  t.ok(all.every((r) => r.statusCode === 200));
  t.ok((fake.calls.ListContainers ?? 0) - before < 10, `${(fake.calls.ListContainers ?? 0) - before} ListContainers calls for 10 requests`);
});

t.test('a runtime slower than the deadline: 504', async (t) => {
  fake.delayMs = 2000;
  try {
    const res = await get('/v1/images');
    t.equal(res.statusCode, 504);
    t.match(res.json().detail, /^runtime did not answer within 1500ms/);
  } finally {
    fake.delayMs = 0;
  }
});

t.test('bad inputs get a 400 with the reason, before any CRI call', async (t) => {
  const before = { ...fake.calls };
  const cases: [string, RegExp][] = [
    ['/v1/containers/abc%2Fdef', /lowercase hex/],
    ['/v1/containers/../etc', /./],
    ['/v1/containers/ab.cd', /lowercase hex/],
    ['/v1/containers/%C3%A9t%C3%A9', /lowercase hex/],
    [`/v1/containers/${'a'.repeat(10_240)}`, /at most 64/],
    ['/v1/pods/ABC', /lowercase hex/],
    ['/v1/containers?bogus=1', /bogus/],
    ['/v1/containers?state=sleeping', /state/],
    ['/v1/pods?state=running', /state/],
    ['/v1/containers?label=noequals', /key=value/],
    ['/v1/containers?name=a%00b', /name/],
    ['/v1/containers?format=yaml', /format/],
    ['/v1/images?image=$(reboot)', /image reference/],
    ['/v1/containers?namespace=Kube_System', /namespace/],
  ];
  for (const [url, reason] of cases) {
    const res = await get(url);
    if (url === '/v1/containers/../etc') {
      t.equal(res.statusCode, 404, 'path normalization leaves no route');
      continue;
    }
    t.equal(res.statusCode, 400, url.slice(0, 60));
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.match(res.json().detail, reason, url.slice(0, 60));
  }
  t.same(fake.calls.ContainerStatus, before.ContainerStatus, 'no call reached the runtime');
});

t.test('unknown routes are problem+json 404s', async (t) => {
  const res = await get('/v2/nothing');
  t.equal(res.statusCode, 404);
  t.match(res.json(), { type: /problems\/not-found$/, title: 'Not found', status: 404, detail: /no route GET \/v2\/nothing/ });
});

t.test('openapi.json documents the routes with their parameters', async (t) => {
  const doc = (await get('/openapi.json')).json();
  t.equal(doc.openapi, '3.0.3');
  for (const p of ['/v1/runtime', '/v1/pods', '/v1/pods/{id}', '/v1/containers', '/v1/containers/{id}', '/v1/images', '/v1/images/fs', '/healthz', '/readyz']) {
    t.ok(doc.paths[p]?.get, `${p} documented`);
  }
  const params = doc.paths['/v1/containers'].get.parameters.map((p: { name: string }) => p.name);
  t.same(params.sort(), ['format', 'label', 'name', 'namespace', 'pod', 'podName', 'state']);
});

t.test('failure modes without a runtime', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodetruth-nocri-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  t.test('missing socket: a fast 503 naming the socket', async (t) => {
    const a = await testApp(['--cri-endpoint', `unix://${dir}/missing.sock`, '--host-root', '/']);
    t.teardown(() => a.close());
    const started = Date.now();
    const res = await a.app.inject('/v1/containers');
    t.equal(res.statusCode, 503);
    t.equal(res.json().detail, `runtime unreachable at ${dir}/missing.sock: connect ENOENT ${dir}/missing.sock`);
    // 503 with ENOENT, not 504: it did not wait out the deadline (time is a figure, not a test)
    t.comment(`answered in ${Date.now() - started} ms`);
  });

  t.test('a listener that never speaks HTTP/2: 504 at the deadline', async (t) => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(join(dir, 'silent.sock'), r));
    const a = await testApp(['--cri-endpoint', `unix://${dir}/silent.sock`, '--cri-timeout', '300ms', '--host-root', '/']);
    t.teardown(async () => {
      await a.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    });
    const res = await a.app.inject('/v1/runtime');
    t.equal(res.statusCode, 504);
    t.match(res.json().detail, /^runtime did not answer within 300ms/);
  });

  t.test('no socket found at all: 503 saying what to pass', async (t) => {
    const a = await testApp(['--host-root', dir]);
    t.teardown(() => a.close());
    t.equal(a.deps.config.criEndpoint, null);
    const res = await a.app.inject('/v1/pods');
    t.equal(res.statusCode, 503);
    t.match(res.json().detail, /pass --cri-endpoint/);
    t.equal((await a.app.inject('/healthz')).statusCode, 200);
  });
});

t.test('one container whose ContainerStatus fails is listed without status fields, named in warnings', async (t) => {
  const running = 'c0ffee03' + 'a'.repeat(56);
  fake.failStatus.add(running);
  t.teardown(() => fake.failStatus.delete(running));
  // a fresh agent: the shared one keeps the running container's status from earlier answers
  const fresh = await testApp(['--cri-endpoint', fake.endpoint, '--cri-timeout', '1500ms', '--host-root', hostRoot]);
  t.teardown(() => fresh.close());
  const get = (url: string) => fresh.app.inject({ method: 'GET', url });
  const res = await get('/v1/containers');
  t.equal(res.statusCode, 200, 'the list stands');
  const body = res.json() as { items: Array<Record<string, unknown>>; warnings: string[] };
  t.equal(body.items.length, 5, 'every container is listed');
  t.match(body.items.find((c) => c.id === running), { state: 'CONTAINER_RUNNING', exitCode: null, startedAt: null, statusError: /INTERNAL: failed to get status of c0ffee03a+: shim: ttrpc: closed/ });
  t.match(body.items.find((c) => c.name === 'sidecar'), { exitCode: 137, statusError: null }, 'the others keep their status');
  t.equal(body.warnings.length, 1);
  t.match(body.warnings[0], /^container c0ffee03aaaaa: ContainerStatus failed, listed without status fields: /);
  const pod = await get('/v1/pods/aaaa');
  t.equal(pod.statusCode, 200);
  t.equal(pod.json().warnings.length, 1);
});
