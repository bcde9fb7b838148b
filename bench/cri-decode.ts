/**
 * The CRI decoding a reading does at 1,000 containers, in this process, the two paths alternated:
 * "generic" (protobufjs decode + toObject, int64 as strings, then normalize.ts; ContainerStatus
 * through a protobufjs type of the six fields a row keeps) and "direct" (src/readers/cri/decode.ts).
 * Kubelet-shaped messages: 4 labels and 5 annotations a container, 3 mounts a status. CPU per reading.
 *
 *   npx tsx bench/cri-decode.ts
 */
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs/light.js';
import { decodeContainerEnd, decodeContainerList, decodeSandboxList } from '../src/readers/cri/decode.js';
import { nanosToRfc3339, redactListed } from '../src/readers/cri/normalize.js';
import { toContainers, toPodSandboxes } from '../test/helpers/cri-generic.js';
import { CRI_DESCRIPTOR_PATH, PROTO_OPTIONS } from '../src/readers/cri/proto.js';
const root = protobuf.Root.fromJSON(JSON.parse(readFileSync(CRI_DESCRIPTOR_PATH, 'utf8')));
const LC = root.lookupType('runtime.v1.ListContainersResponse'), LS = root.lookupType('runtime.v1.ListPodSandboxResponse'), SR = root.lookupType('runtime.v1.ContainerStatusResponse');
const End = new protobuf.Type('ContainerEnd').add(new protobuf.Field('id', 1, 'string')).add(new protobuf.Field('state', 3, 'runtime.v1.ContainerState')).add(new protobuf.Field('startedAt', 5, 'int64')).add(new protobuf.Field('finishedAt', 6, 'int64')).add(new protobuf.Field('exitCode', 7, 'int32')).add(new protobuf.Field('reason', 10, 'string'));
const ER = new protobuf.Type('ContainerEndResponse').add(new protobuf.Field('status', 1, 'ContainerEnd'));
root.define('x').add(End).add(ER); root.resolveAll();
const conv = PROTO_OPTIONS as protobuf.IConversionOptions;
const now = 1_764_700_000_000_000_000n;
const kubeletLabels = (i: number) => ({ 'io.kubernetes.container.name': `c${i % 4}`, 'io.kubernetes.pod.name': `app-${i >> 2}`, 'io.kubernetes.pod.namespace': `ns-${i % 10}`, 'io.kubernetes.pod.uid': `${(i >> 2).toString(16).padStart(8, '0')}-1111-4222-8333-944455556666` });
const ann = { 'io.kubernetes.container.hash': 'abcd1234', 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.container.terminationMessagePath': '/dev/termination-log', 'io.kubernetes.container.terminationMessagePolicy': 'File', 'io.kubernetes.pod.terminationGracePeriod': '30' };
const containers = Array.from({ length: 1000 }, (_, i) => ({ id: i.toString(16).padStart(64, 'b'), podSandboxId: (i >> 2).toString(16).padStart(64, 'a'), metadata: { name: `c${i % 4}`, attempt: 0 }, image: { image: 'sha256:' + 'c'.repeat(64), userSpecifiedImage: 'docker.io/library/busybox:1.36' }, imageRef: 'sha256:' + 'ab'.repeat(32), state: 1, createdAt: String(now + BigInt(i) * 1_000_000_007n), labels: kubeletLabels(i), annotations: ann }));
const sandboxes = Array.from({ length: 250 }, (_, i) => ({ id: i.toString(16).padStart(64, 'a'), metadata: { name: `app-${i}`, uid: `${i.toString(16).padStart(8, '0')}-1111-4222-8333-944455556666`, namespace: `ns-${i % 10}`, attempt: 0 }, state: 0, createdAt: String(now - BigInt(i)), labels: { 'io.kubernetes.pod.name': `app-${i}`, app: 'x', 'pod-template-hash': '5d8f7b' }, annotations: { 'kubernetes.io/config.seen': '2025-12-02T10:00:00Z', 'kubernetes.io/config.source': 'api' }, runtimeHandler: '' }));
const bc = LC.encode(LC.fromObject({ containers })).finish(), bs = LS.encode(LS.fromObject({ items: sandboxes })).finish();
const statuses = containers.map((c, i) => SR.encode(SR.fromObject({ status: { id: c.id, metadata: c.metadata, state: 1, createdAt: c.createdAt, startedAt: String(now + BigInt(i)), finishedAt: '0', exitCode: 0, image: c.image, imageRef: c.imageRef, reason: '', message: '', labels: c.labels, annotations: c.annotations, mounts: [{ containerPath: '/var/run/secrets/kubernetes.io/serviceaccount', hostPath: '/var/lib/kubelet/pods/x/volumes/kubernetes.io~projected/kube-api-access-abcde', readonly: true }, { containerPath: '/etc/hosts', hostPath: '/var/lib/kubelet/pods/x/etc-hosts' }, { containerPath: '/dev/termination-log', hostPath: '/var/lib/kubelet/pods/x/containers/c/0' }], logPath: `/var/log/pods/x/c/0.log` }, info: {} })).finish());
const generic = async () => {
  await toContainers((LC.toObject(LC.decode(bc), conv) as any).containers); await toPodSandboxes((LS.toObject(LS.decode(bs), conv) as any).items);
  for (const b of statuses) { const s: any = (ER.toObject(ER.decode(b), conv) as any).status ?? {}; ({ id: s.id, state: s.state, startedAt: nanosToRfc3339(s.startedAt), finishedAt: nanosToRfc3339(s.finishedAt), exitCode: Number(s.exitCode ?? 0), reason: s.reason ?? '' }); }
};
const direct = async () => {
  await redactListed(decodeContainerList(bc).containers, async () => {}); await redactListed(decodeSandboxList(bs).items, async () => {});
  for (const b of statuses) decodeContainerEnd(b);
};
const res: Record<string, number[]> = { generic: [], direct: [] };
for (let i = 0; i < 40; i++) for (const [n, f] of [['generic', generic], ['direct', direct]] as const) { const c = process.cpuUsage(); await f(); const d = process.cpuUsage(c); if (i >= 5) res[n]!.push((d.user + d.system) / 1000); }
const med = (x: number[] = []) => x.sort((a, b) => a - b)[x.length >> 1]!.toFixed(1);
console.log(JSON.stringify({ bytes: { list: bc.length, sandboxes: bs.length, statusEach: statuses[0]!.length }, generic: med(res.generic), direct: med(res.direct), load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') }));
