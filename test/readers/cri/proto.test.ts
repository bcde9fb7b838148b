/**
 * The CRI coders of src/readers/cri/proto.ts: built from the committed JSON descriptor,
 * they must stay what @grpc/proto-loader makes of the .proto text. The descriptor is made
 * again from the .proto and compared with the committed file, and every method the agent
 * calls is asked through real gRPC of a fake runtime (served from the .proto text) by our
 * client and by a proto-loader client: the same requests reach it and the same objects
 * come back (int64 as strings, enums as names, defaults, oneofs, maps, nested messages).
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import t from 'tap';
import { criDescriptorText } from '../../../scripts/cri-descriptor.js';
import { CRI_DESCRIPTOR_PATH, CRI_PROTO_PATH, criServices, PROTO_OPTIONS } from '../../../src/readers/cri/proto.js';
import { capturedRuntime } from '../../fixtures/captured-runtime.js';
import { SPIN_ID } from '../../fixtures/node-tree.js';
import { containerd21Status } from '../../fixtures/cri/containerd-2.1-status.js';
import { FakeCriServer } from '../../helpers/fake-cri.js';

type Ctor = grpc.ServiceClientConstructor;
const loaderServices = () =>
  (grpc.loadPackageDefinition(protoLoader.loadSync(CRI_PROTO_PATH, PROTO_OPTIONS)) as unknown as { runtime: { v1: { RuntimeService: Ctor; ImageService: Ctor } } }).runtime.v1;

t.test('the committed descriptor is the one the .proto makes (run `npx tsx scripts/cri-descriptor.ts` after editing it)', async (t) => {
  t.equal(readFileSync(CRI_DESCRIPTOR_PATH, 'utf8'), criDescriptorText());
});

t.test('the same methods, paths and names as proto-loader gives', async (t) => {
  const ours = criServices();
  const theirs = loaderServices();
  for (const name of ['RuntimeService', 'ImageService'] as const) {
    const shape = (c: Ctor) =>
      Object.fromEntries(Object.entries(c.service).map(([m, d]) => [m, { path: d.path, requestStream: d.requestStream, responseStream: d.responseStream, originalName: d.originalName }]));
    t.same(shape(ours[name]), shape(theirs[name]), name);
    t.ok(Object.keys(ours[name].service).length > 0, `${name} has methods`);
  }
  t.equal(criServices(), ours, 'built once');
});

t.test('a request that is not a message object is refused before it is sent', async (t) => {
  const d = criServices().RuntimeService.service.ListContainers!;
  t.throws(() => d.requestSerialize([] as never), /expected object with ListContainersRequest structure/);
});

t.test('over real gRPC, our client and a proto-loader client send and get the same', async (t) => {
  const fake = new FakeCriServer(capturedRuntime());
  fake.statusReply = containerd21Status();
  await fake.start();
  const target = `unix:${fake.endpoint.replace(/^unix:\/\//, '')}`;
  const open = (s: { RuntimeService: Ctor; ImageService: Ctor }) => ({
    runtime: new s.RuntimeService(target, grpc.credentials.createInsecure()),
    images: new s.ImageService(target, grpc.credentials.createInsecure()),
  });
  const ours = open(criServices());
  const theirs = open(loaderServices());
  t.teardown(async () => {
    for (const c of [ours.runtime, ours.images, theirs.runtime, theirs.images]) c.close();
    await fake.stop();
  });
  const ask = (client: grpc.Client, method: string, request: object) =>
    new Promise<unknown>((resolve, reject) =>
      (client as unknown as Record<string, Function>)[method]!.call(client, request, { deadline: Date.now() + 5000 }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))),
    );
  const sandbox = capturedRuntime().pods[0]!.id;
  const calls: [keyof typeof ours, string, object][] = [
    ['runtime', 'Version', {}],
    ['runtime', 'Status', { verbose: true }],
    ['runtime', 'ListPodSandbox', {}],
    ['runtime', 'ListPodSandbox', { filter: { state: { state: 'SANDBOX_READY' } } }],
    ['runtime', 'PodSandboxStatus', { podSandboxId: sandbox, verbose: true }],
    ['runtime', 'ListContainers', {}],
    ['runtime', 'ListContainers', { filter: { podSandboxId: sandbox, labelSelector: { 'io.kubernetes.pod.namespace': 'default' } } }],
    ['runtime', 'ContainerStatus', { containerId: SPIN_ID, verbose: true }],
    ['images', 'ListImages', {}],
    ['images', 'ImageFsInfo', {}],
  ];
  for (const [service, method, request] of calls) {
    const got = await ask(ours[service], method, request);
    t.same(got, await ask(theirs[service], method, request), `${method} ${JSON.stringify(request)}`);
    t.strictSame(JSON.parse(JSON.stringify(got)), JSON.parse(JSON.stringify(await ask(theirs[service], method, request))), `${method}: same JSON`);
  }
  const list = (await ask(ours.runtime, 'ListContainers', {})) as { containers: { createdAt: unknown; state: unknown }[] };
  t.ok(list.containers.length > 0);
  t.type(list.containers[0]!.createdAt, 'string', 'int64 as a string');
  t.match(list.containers[0]!.state, /^CONTAINER_/, 'enum as its name');
  const filtered = (await ask(ours.runtime, 'ListContainers', { filter: { id: SPIN_ID } })) as { containers: { id: string }[] };
  t.same(
    filtered.containers.map((c) => c.id),
    [SPIN_ID],
    'the request is encoded: the runtime applied its filter',
  );
  const missing = ask(ours.runtime, 'ContainerStatus', { containerId: 'f'.repeat(64) });
  await t.rejects(missing, { code: grpc.status.NOT_FOUND }, 'an error status comes through as it did');
});
