/**
 * The runtime index (src/view/runtime-index.ts) through the real HTTP server, over the
 * captured node's cgroup tree and a fake CRI runtime: a runtime late for its deadline
 * renames nothing (the last successful list's names stay on /v1/cgroups and on every
 * /metrics series), an id the last list no longer holds is forgotten (with --max-age 0: every
 * request reads the runtime anew), and concurrent requests of different routes inside --max-age
 * share one ListContainers.
 */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { armCanaries, GUARANTEED_ID, GUARANTEED_UID, realNode, SPIN_ID } from '../fixtures/node-tree.js';

const fx = realNode('systemd');
armCanaries(fx.canaries);
const node = capturedRuntime();
const fake = new FakeCriServer(node);
await fake.start();
// The runtime's deadline only tells an answer from a late one: a first call on a loaded machine
// (the channel's connection, code run cold) must fit in it, and a late answer is held past it
// by the FAKE runtime's timer (LATE_MS), which no load makes early.
const CRI_TIMEOUT_MS = 3000;
const LATE_MS = CRI_TIMEOUT_MS + 3000;
const flags = ['--host-root', fx.root, '--cri-endpoint', fake.endpoint, '--cri-timeout', `${CRI_TIMEOUT_MS}ms`, '--kubelet-healthz', 'http://127.0.0.1:1/healthz'];
const a = await testApp([...flags, '--max-age', '0']);
await a.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(a.app.server.address() as AddressInfo).port}`;
t.teardown(async () => {
  await a.close();
  await fake.stop();
  fx.cleanup();
});

type Rec = Record<string, any>;
const getJson = async (url: string): Promise<Rec> => {
  const res = await fetch(base + url);
  t.equal(res.status, 200, url);
  return (await res.json()) as Rec;
};
const getText = async (url: string): Promise<string> => (await fetch(base + url)).text();
const byId = (items: Rec[], id: string) => items.find((r) => r.containerId === id);
const seriesOf = (text: string, name: string, id: string) => text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(id));

t.test('a runtime late for its deadline renames nothing: the last list names cgroups and series', async (t) => {
  const fresh = await getJson('/v1/cgroups');
  t.same(fresh.runtime, { joined: true });
  t.match(byId(fresh.items, SPIN_ID), { podName: 'lab', podNamespace: 'default', containerName: 'spin', sandbox: false });
  const m1 = await getText('/metrics');
  t.match(seriesOf(m1, 'container_memory_working_set_bytes', SPIN_ID), /namespace="default",pod="lab",container="spin"/);

  fake.delayMs = LATE_MS;
  t.teardown(() => void (fake.delayMs = 0));
  const late = await getJson('/v1/cgroups');
  t.match(late.runtime, { joined: false, detail: /^runtime did not answer within 3 ?s.*: names of the last successful list$/, namesFrom: 'last successful list' });
  t.match(byId(late.items, SPIN_ID), { podName: 'lab', podNamespace: 'default', containerName: 'spin', sandbox: false }, 'same names');
  t.match(late.items.find((r: Rec) => r.kind === 'pod' && r.podUid === GUARANTEED_UID), { podName: 'db', podNamespace: 'prod' });

  const m2 = await getText('/metrics');
  t.match(m2, /nodetruth_scrape_source_up\{source="runtime"\} 0/, 'the runtime is down in this scrape');
  t.match(seriesOf(m2, 'container_memory_working_set_bytes', SPIN_ID), /namespace="default",pod="lab",container="spin",.*image="localhost\/nodetruth\/busybox:test"/, 'the series keeps its names');
  t.match(seriesOf(m2, 'container_memory_working_set_bytes', GUARANTEED_ID), /namespace="prod",pod="db",container="postgres"/);
  fake.delayMs = 0;
});

t.test('an id the last successful list no longer holds is forgotten', async (t) => {
  const removed = node.containers.splice(node.containers.findIndex((c) => c.id === GUARANTEED_ID), 1);
  t.teardown(() => void node.containers.push(...removed));
  t.same((await getJson('/v1/cgroups')).runtime, { joined: true });
  fake.delayMs = LATE_MS;
  t.teardown(() => void (fake.delayMs = 0));
  const late = await getJson('/v1/cgroups');
  t.equal(late.runtime.joined, false);
  t.match(byId(late.items, GUARANTEED_ID), { containerName: null, sandbox: null }, 'its container name is gone');
  t.match(byId(late.items, GUARANTEED_ID), { podName: 'db' }, 'its pod, still listed, keeps its name');
  t.match(byId(late.items, SPIN_ID), { containerName: 'spin' });
  fake.delayMs = 0;
});

t.test('concurrent requests of different routes inside --max-age share one ListContainers', async (t) => {
  const b = await testApp([...flags, '--max-age', '1m']);
  await b.app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => b.close());
  const baseB = `http://127.0.0.1:${(b.app.server.address() as AddressInfo).port}`;
  fake.delayMs = 150; // long enough for the requests to overlap
  t.teardown(() => void (fake.delayMs = 0));
  const before = fake.calls.ListContainers ?? 0;
  // two full-node routes (the load shedder runs two distinct ones at once) and two by id
  const urls = ['/v1/cgroups', '/v1/containers', `/v1/cgroups/${SPIN_ID.slice(0, 8)}`, `/v1/containers/${SPIN_ID.slice(0, 8)}/namespaces`];
  const answers = await Promise.all(urls.map((u) => fetch(baseB + u)));
  t.same(answers.map((r) => r.status), [200, 200, 200, 200]);
  t.equal((fake.calls.ListContainers ?? 0) - before, 1, 'one ListContainers for four requests');
  t.equal(new Set(answers.map((r) => r.headers.get('x-nodetruth-observed-at'))).size, 1, 'one reading');
  fake.delayMs = 0;
});

t.test('a runtime that lists image IDs (containerd 1.6 under kubelet): rows and series named by the image\'s tag, one ListImages per reading', async (t) => {
  // kubelet passes the image ID as the image and the name in user_specified_image, which
  // containerd 1.6 does not keep: its ListContainers answers the ID (seen on the bookworm node:
  // "sha256:81eaec12…" for localhost/e2e/busybox:1)
  const spin = node.containers.find((c) => c.id === SPIN_ID)!;
  const db = node.containers.find((c) => c.id === GUARANTEED_ID)!;
  const was = [spin.image, db.image] as const;
  spin.image = node.images[0]!.id;
  db.image = `sha256:${'d'.repeat(64)}`; // no such image listed: stays the ID
  t.teardown(() => void ([spin.image, db.image] = was));
  const before = { images: fake.calls.ListImages ?? 0, lists: fake.calls.ListContainers ?? 0 };
  const rows = (await getJson('/v1/containers')).items as Rec[];
  t.equal(rows.find((r) => r.id === SPIN_ID)?.image, 'localhost/nodetruth/busybox:test');
  t.equal(rows.find((r) => r.id === GUARANTEED_ID)?.image, db.image);
  const m = await getText('/metrics');
  t.match(seriesOf(m, 'container_memory_working_set_bytes', SPIN_ID), /image="localhost\/nodetruth\/busybox:test"/);
  t.equal((fake.calls.ListImages ?? 0) - before.images, (fake.calls.ListContainers ?? 0) - before.lists, 'one ListImages per ListContainers that needs it');

  [spin.image, db.image] = was;
  const named = { images: fake.calls.ListImages ?? 0 };
  await getJson('/v1/containers');
  t.equal((fake.calls.ListImages ?? 0) - named.images, 0, 'no ListImages where every row has its name');

  spin.image = node.images[0]!.id;
  // ListImages answers UNAVAILABLE: the fake's handler throws what grpc-js sends as the status
  const images = node.images;
  node.images = { map: () => { throw Object.assign(new Error('unavailable'), { code: 14, details: 'image service unavailable' }); } } as unknown as typeof images;
  t.teardown(() => void (node.images = images));
  t.equal(((await getJson('/v1/containers')).items as Rec[]).find((r) => r.id === SPIN_ID)?.image, spin.image, 'a failed ListImages leaves the ID');
});
