/**
 * The decoders of decode.ts against the generic path they replace (protobufjs decode +
 * toObject, then normalize.ts; for ContainerEnd a protobufjs type of its six fields): over real gRPC to the fake runtime (its server encodes with
 * proto-loader, as a runtime's bytes), and on wire bytes encoded and then damaged here, the
 * same records or the same failure. Timestamps past 2^53 nanoseconds, unset and negative ones,
 * unknown enum values, duplicate and `__proto__` map keys, repeated and unknown fields.
 */
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs/light.js';
import t, { type Test } from 'tap';
import { CriClient } from '../../../src/readers/cri/client.js';
import { decodeContainerEnd, decodeContainerList, decodeSandboxList } from '../../../src/readers/cri/decode.js';
import { nanosToRfc3339, redactListed } from '../../../src/readers/cri/normalize.js';
import { toContainers, toPodSandboxes } from '../../helpers/cri-generic.js';
import { CRI_DESCRIPTOR_PATH, PROTO_OPTIONS } from '../../../src/readers/cri/proto.js';
import { FakeCriServer, generateFakeNode } from '../../helpers/fake-cri.js';

const root = protobuf.Root.fromJSON(JSON.parse(readFileSync(CRI_DESCRIPTOR_PATH, 'utf8')) as protobuf.INamespace);
const ListContainers = root.lookupType('runtime.v1.ListContainersResponse');
const ListSandboxes = root.lookupType('runtime.v1.ListPodSandboxResponse');
const conv = PROTO_OPTIONS as protobuf.IConversionOptions;
const StatusResponse = root.lookupType('runtime.v1.ContainerStatusResponse');
// ContainerStatus as a list row read it before: the fields it keeps, under their wire numbers
const End = new protobuf.Type('ContainerEnd')
  .add(new protobuf.Field('id', 1, 'string'))
  .add(new protobuf.Field('state', 3, 'runtime.v1.ContainerState'))
  .add(new protobuf.Field('startedAt', 5, 'int64'))
  .add(new protobuf.Field('finishedAt', 6, 'int64'))
  .add(new protobuf.Field('exitCode', 7, 'int32'))
  .add(new protobuf.Field('reason', 10, 'string'));
const EndResponse = new protobuf.Type('ContainerEndResponse').add(new protobuf.Field('status', 1, 'ContainerEnd'));
root.define('test.reduced').add(End).add(EndResponse);
root.resolveAll();

/** What the agent made of these bytes before: the full decode, toObject, normalize.ts. */
const generic: Record<'containers' | 'sandboxes' | 'end', (b: Uint8Array) => Promise<unknown>> = {
  containers: async (b: Uint8Array) => toContainers((ListContainers.toObject(ListContainers.decode(b), conv) as { containers: unknown[] }).containers),
  sandboxes: async (b: Uint8Array) => toPodSandboxes((ListSandboxes.toObject(ListSandboxes.decode(b), conv) as { items: unknown[] }).items),
  end: async (b: Uint8Array) => {
    const s = (EndResponse.toObject(EndResponse.decode(b), conv) as { status: Record<string, any> | null }).status ?? {}; // eslint-disable-line @typescript-eslint/no-explicit-any
    return { id: s.id, state: s.state, startedAt: nanosToRfc3339(s.startedAt), finishedAt: nanosToRfc3339(s.finishedAt), exitCode: Number(s.exitCode ?? 0), reason: s.reason ?? '' };
  },
};
const reduced = {
  containers: (b: Uint8Array) => redactListed(decodeContainerList(b).containers),
  sandboxes: (b: Uint8Array) => redactListed(decodeSandboxList(b).items),
  end: async (b: Uint8Array) => decodeContainerEnd(b),
};

/** Both paths on the same bytes: equal JSON, or both failing. */
async function same(t: Test, kind: 'containers' | 'sandboxes' | 'end', bytes: Uint8Array, what: string): Promise<'ok' | 'error'> {
  let a: string | Error;
  let b: string | Error;
  try {
    a = JSON.stringify(await generic[kind](bytes));
  } catch (err) {
    a = err as Error;
  }
  try {
    b = JSON.stringify(await reduced[kind](bytes));
  } catch (err) {
    b = err as Error;
  }
  if (typeof a === 'string' || typeof b === 'string') t.equal(b, a, what);
  else t.pass(`${what}: both fail (${a.message} / ${b.message})`);
  return typeof a === 'string' ? 'ok' : 'error';
}

const NS = 1_000_000_000n;
const containerMsg = (i: number, extra: Record<string, unknown> = {}) => ({
  id: `b${i.toString(16).padStart(63, '0')}`,
  podSandboxId: `a${(i >> 2).toString(16).padStart(63, '0')}`,
  metadata: { name: `c${i}`, attempt: i % 7 },
  image: { image: 'docker.io/library/busybox:1.36', annotations: { 'io.kubernetes.cri.image-ref': 'x' }, ...(i % 3 === 0 ? { userSpecifiedImage: 'busybox:1.36' } : {}) },
  imageRef: `sha256:${'ab'.repeat(32)}`,
  state: i % 4,
  createdAt: String(1_764_700_000_123_456_789n + BigInt(i) * 7n * NS + BigInt(i)),
  // `__proto__` as a key of its own (JSON.parse), not the literal's prototype
  labels: { 'io.kubernetes.container.name': `c${i}`, 'io.kubernetes.pod.name': `app-${i}`, 'app.example/api-token': 'hunter2', ...JSON.parse('{"__proto__":"polluted"}') },
  annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ spec: { containers: [{ env: [{ name: 'PASSWORD', value: 's3cret' }] }] } }), note: 'y' },
  imageId: 'sha256:ff',
  ...extra,
});
const sandboxMsg = (i: number, extra: Record<string, unknown> = {}) => ({
  id: `a${i.toString(16).padStart(63, '0')}`,
  metadata: { name: `app-${i}`, uid: `${i.toString(16).padStart(8, '0')}-1111-4222-8333-944455556666`, namespace: `ns-${i % 3}`, attempt: i % 2 },
  state: i % 2,
  createdAt: String(1_764_700_000_000_000_000n - BigInt(i)),
  labels: { 'io.kubernetes.pod.name': `app-${i}`, secret_key: 'v' },
  annotations: { 'kubernetes.io/config.source': 'api' },
  runtimeHandler: i % 2 ? 'runc' : '',
  ...extra,
});
const encC = (containers: object[]) => ListContainers.encode(ListContainers.fromObject({ containers })).finish();
const encS = (items: object[]) => ListSandboxes.encode(ListSandboxes.fromObject({ items })).finish();

t.test('over gRPC from the fake runtime: the records the generic decode gave', async (t) => {
  const node = generateFakeNode(12, 4);
  node.containers[0]!.labels = { ...node.containers[0]!.labels, 'app.example/api-token': 'hunter2', big: 'x'.repeat(5000) };
  node.containers[0]!.annotations = { 'io.kubernetes.container.hash': 'abc' };
  node.containers[1]!.createdAt = 1_764_700_000_123_456_789n; // past 2^53
  node.containers[2]!.createdAt = 0n; // unset
  const fake = new FakeCriServer(node);
  await fake.start();
  const cri = new CriClient(fake.endpoint, 5000);
  t.teardown(async () => {
    cri.close();
    await fake.stop();
  });
  // the service's own method: the generic decode, as bench/route-ab.ts's baseline makes it
  const rawCall = <T>(method: string) =>
    new Promise<T>((resolve, reject) =>
      (cri as unknown as { runtime: Record<string, Function> }).runtime[method]!({}, { deadline: Date.now() + 5000 }, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
    );
  const containers = await cri.listContainers();
  t.equal(containers.length, 48);
  t.equal(JSON.stringify(containers), JSON.stringify(await toContainers((await rawCall<{ containers: unknown[] }>('ListContainers')).containers)));
  t.equal(containers[1]!.createdAt, '2025-12-02T18:26:40.123456789Z', 'nanoseconds past 2^53, exact');
  t.equal(containers[2]!.createdAt, null, '0: unset');
  t.equal(containers[0]!.labels['app.example/api-token'], '<redacted>', 'a secret-named label is redacted');
  const sandboxes = await cri.listPodSandboxes();
  t.equal(sandboxes.length, 12);
  t.equal(JSON.stringify(sandboxes), JSON.stringify(await toPodSandboxes((await rawCall<{ items: unknown[] }>('ListPodSandbox')).items)));
});

t.test('encoded lists: the same records', async (t) => {
  t.equal(await same(t, 'containers', encC([]), 'empty list'), 'ok');
  t.equal(await same(t, 'containers', encC(Array.from({ length: 40 }, (_, i) => containerMsg(i))), '40 containers'), 'ok');
  t.equal(await same(t, 'sandboxes', encS(Array.from({ length: 10 }, (_, i) => sandboxMsg(i))), '10 sandboxes'), 'ok');
  const times = ['0', '1', '999999999', '1000000000', '-1', '-9223372036854775808', '9223372036854775807', '4102444800000000000', '1764700000123456789'];
  await same(t, 'containers', encC(times.map((createdAt, i) => containerMsg(i, { createdAt }))), `timestamps ${times.join(' ')}`);
  await same(t, 'sandboxes', encS(times.map((createdAt, i) => sandboxMsg(i, { createdAt }))), 'sandbox timestamps');
  // int64 values over the whole range, each bit length as often (a fixed sequence)
  let x = 0x9e3779b97f4a7c15n;
  const some = Array.from({ length: 256 }, (_, i) => {
    x = (x * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return String(BigInt.asIntN(64, x >> BigInt(i % 64)));
  });
  await same(t, 'containers', encC(some.map((createdAt, i) => containerMsg(i, { createdAt }))), '256 int64 timestamps of every size and sign');
  await same(t, 'end', encEnd({ status: { startedAt: some[7], finishedAt: some[70] } }), 'status timestamps');
  await same(t, 'containers', encC([containerMsg(1, { metadata: undefined, image: undefined, labels: {}, annotations: {} })]), 'no metadata, image or maps');
  await same(t, 'sandboxes', encS([sandboxMsg(1, { metadata: undefined, labels: {}, annotations: {} })]), 'no metadata, no maps');
});

/** A field appended on the wire by hand: tag, then the bytes. */
const concat = (...parts: Uint8Array[]) => Buffer.concat(parts.map((p) => Buffer.from(p)));
const w = protobuf.Writer;
/** `n` as a varint padded to 10 bytes, the 10th being `last`. */
const longVarint = (n: bigint, last: number) => {
  const out: number[] = [];
  for (let i = 0; i < 9; i++, n >>= 7n) out.push(Number(n & 127n) | 0x80);
  return [...out, last];
};
const item = (body: Uint8Array) => w.create().uint32((1 << 3) | 2).bytes(body).finish();

t.test('wire shapes the encoder does not make: the same records or the same failure', async (t) => {
  const body = ListContainers.lookupType('runtime.v1.Container').encode(containerMsg(5)).finish();
  const cases: [string, Uint8Array][] = [
    ['unknown enum value', concat(body, w.create().uint32(6 << 3).int32(9).finish())],
    ['metadata twice: replaced', concat(body, w.create().uint32((3 << 3) | 2).bytes(w.create().uint32(2 << 3).uint32(4).finish()).finish())],
    ['image twice: replaced', concat(body, w.create().uint32((4 << 3) | 2).bytes(w.create().uint32((18 << 3) | 2).string('u').finish()).finish())],
    ['a duplicate label key', concat(body, w.create().uint32((8 << 3) | 2).bytes(w.create().uint32(10).string('io.kubernetes.container.name').uint32(18).string('z').finish()).finish())],
    ['a label with no value', concat(body, w.create().uint32((8 << 3) | 2).bytes(w.create().uint32(10).string('k').finish()).finish())],
    ['unknown fields of every wire type', concat(body, w.create().uint32((99 << 3) | 0).uint64(5).uint32((98 << 3) | 1).fixed64(1).uint32((97 << 3) | 5).fixed32(1).uint32((96 << 3) | 2).string('x').finish())],
    ['a group', concat(body, w.create().uint32((95 << 3) | 3).uint32((1 << 3) | 0).uint32(1).uint32((95 << 3) | 4).finish())],
    ['a known field with another wire type', concat(body, w.create().uint32((7 << 3) | 2).uint32(1).finish())],
    ['a 10-byte varint with high bits', concat(body, Buffer.from([7 << 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]))],
    ['a 10-byte varint whose last byte carries bits past the 64th', concat(body, Buffer.from([7 << 3, ...longVarint(1_764_700_000_123_456_789n, 0x02)]))],
    ['a __proto__ label on the wire', concat(body, w.create().uint32((8 << 3) | 2).bytes(w.create().uint32(10).string('__proto__').uint32(18).string('z').finish()).finish())],
    ['an 11-byte varint', concat(body, Buffer.from([7 << 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))],
    ['a varint cut short at the end', concat(body, Buffer.from([7 << 3, 0x80, 0x80, 0x80]))],
    ['a varint of 4 continued bytes at the end', concat(body, Buffer.from([7 << 3, 0x81, 0x82, 0x83, 0x84]))],
    ['a truncated string', concat(body, Buffer.from([(1 << 3) | 2, 40, 0x61]))],
  ];
  for (const [what, b] of cases) await same(t, 'containers', item(b), what);
  await same(t, 'containers', concat(item(body), Buffer.from([0x0a, 0x05, 0x08])), 'an item longer than the message');
});

t.test('randomly damaged lists: the same records or the same failure', async (t) => {
  // a fixed seed: the same bytes every run
  let seed = 0x2545f491;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const good = { containers: encC(Array.from({ length: 6 }, (_, i) => containerMsg(i))), sandboxes: encS(Array.from({ length: 6 }, (_, i) => sandboxMsg(i))) };
  const seen = { ok: 0, error: 0 };
  for (let i = 0; i < 400; i++) {
    const kind = i % 2 ? 'sandboxes' : 'containers';
    const b = Buffer.from(good[kind]);
    for (let k = 1 + rand(3); k > 0; k--) b[rand(b.length)] = rand(256);
    const cut = rand(4) === 0 ? b.subarray(0, rand(b.length)) : b;
    seen[await same(t, kind, cut, `${kind} damaged #${i}`)]++;
  }
  t.ok(seen.ok > 0 && seen.error > 0, `both outcomes exercised (${seen.ok} decoded, ${seen.error} failed)`);
});

const statusMsg = (i: number, extra: Record<string, unknown> = {}) => ({
  status: {
    id: `b${i.toString(16).padStart(63, '0')}`,
    metadata: { name: `c${i}`, attempt: i },
    state: i % 4,
    createdAt: '1764700000000000000',
    startedAt: String(1_764_700_000_123_456_789n + BigInt(i)),
    finishedAt: i % 2 ? '0' : '1764700100987654321',
    exitCode: i % 3 ? 137 : -1,
    image: { image: 'busybox' },
    imageRef: 'sha256:ab',
    reason: i % 2 ? '' : 'OOMKilled',
    message: 'm',
    labels: { a: 'b', 'app.example/api-token': 'x' },
    annotations: { c: 'd' },
    mounts: [{ containerPath: '/x', hostPath: '/y', readonly: true }],
    logPath: '/var/log/pods/x.log',
    ...extra,
  },
  info: { info: '{"pid":1}' },
});
const encEnd = (m: object) => StatusResponse.encode(StatusResponse.fromObject(m)).finish();

t.test('ContainerStatus for a row: the fields the reduced protobufjs type gave, the rest skipped', async (t) => {
  for (let i = 0; i < 8; i++) t.equal(await same(t, 'end', encEnd(statusMsg(i)), `status ${i}`), 'ok');
  await same(t, 'end', encEnd({}), 'no status at all');
  await same(t, 'end', encEnd({ status: {} }), 'an empty status');
  await same(t, 'end', encEnd(statusMsg(1, { startedAt: '-5', finishedAt: '9223372036854775807' })), 'a negative and the largest int64');
  const end = decodeContainerEnd(encEnd(statusMsg(2)));
  t.strictSame(end, { id: `b${'2'.padStart(63, '0')}`, state: 'CONTAINER_EXITED', startedAt: '2025-12-02T18:26:40.123456791Z', finishedAt: '2025-12-02T18:28:20.987654321Z', exitCode: 137, reason: 'OOMKilled' });
  let seed = 0x6d2b79f5;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const good = encEnd(statusMsg(4));
  for (let i = 0; i < 200; i++) {
    const b = Buffer.from(good);
    for (let k = 1 + rand(3); k > 0; k--) b[rand(b.length)] = rand(256);
    await same(t, 'end', rand(4) === 0 ? b.subarray(0, rand(b.length)) : b, `status damaged #${i}`);
  }
});
