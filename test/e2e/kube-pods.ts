// The two pods users run, as the API server would hold them, captured from the real
// tools rather than written by hand:
//   debug:     what `kubectl debug node/<node> --profile=sysadmin --custom=deploy/debug-profile.yaml
//              --image=<image> -- nodetruth serve` POSTs (recorded by the FAKE API server in
//              test/helpers, which serves kubectl's discovery and GET node);
//   daemonset: the DaemonSet's pod template from `kubectl kustomize deploy/daemonset`, made a
//              pod the way the DaemonSet controller does (name, owner, nodeName, uid).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { parseAllDocuments } from 'yaml';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { runOk } from './util.js';
import { projectRoot } from './vm.js';

export const AGENT_IMAGE = 'ghcr.io/nodetruth/nodetruth:0.1.0';

export interface PodSpecLike {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, any>;
}

/**
 * A self-signed CA certificate (basicConstraints CA:TRUE, openssl req -x509's default) for
 * the FAKE API server, valid for the address the guest reaches it at and for loopback:
 * it is the pod's ca.crt too. kubectl sends its bearer token over TLS only.
 */
export async function fakeApiCert(dir: string, ips: string[]): Promise<{ key: string; cert: string }> {
  const key = join(dir, 'apiserver.key');
  const cert = join(dir, 'apiserver.crt');
  await runOk(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=fake-kube-apiserver', '-addext', `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')},DNS:kubernetes.default.svc`, '-keyout', key, '-out', cert],
    { timeoutMs: 30_000 },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

const here = join(projectRoot, 'test', 'e2e');

/**
 * Decodes a Kubernetes protobuf body (magic "k8s\0" + runtime.Unknown{raw: Pod}) into the
 * JSON shape of the same Pod: Quantity and IntOrString as their scalar, a volume's source
 * and a probe's handler inlined, as Kubernetes' JSON has them.
 */
export function decodePodProtobuf(body: Buffer): unknown {
  if (body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw new Error('not a Kubernetes protobuf body (no k8s\\0 magic)');
  const root = protobuf.loadSync(join(here, 'k8s-pod.proto'));
  const unknown = root.lookupType('e2e.k8s.Unknown').decode(body.subarray(4)) as unknown as { typeMeta?: { kind?: string }; raw?: Uint8Array };
  if (unknown.typeMeta?.kind !== 'Pod' || !unknown.raw) throw new Error(`expected a Pod, got ${unknown.typeMeta?.kind}`);
  const Pod = root.lookupType('e2e.k8s.Pod');
  const obj = Pod.toObject(Pod.decode(unknown.raw), { longs: Number, defaults: false, arrays: false, objects: false });
  return { apiVersion: 'v1', kind: 'Pod', ...jsonShape(obj) as object };
}

function jsonShape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonShape);
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 1 && keys[0] === 'string') return o.string; // Quantity
  if ('intVal' in o || 'strVal' in o || (keys.length === 1 && keys[0] === 'type')) return Number(o.type ?? 0) === 1 ? o.strVal : (o.intVal ?? 0); // IntOrString
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) {
    if (k === 'volumeSource' || k === 'handler') Object.assign(out, jsonShape(x) as object);
    else out[k] = jsonShape(x);
  }
  return out;
}

/** A v1 Node as kubectl debug reads it (it copies nothing but the name into the pod). */
function apiNode(name: string): object {
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: { name, uid: '0c0f3f6e-1d5b-4f7c-9d61-5d2d0e2e0001', labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
    spec: {},
    status: { addresses: [{ type: 'InternalIP', address: '10.0.2.15' }, { type: 'Hostname', address: name }] },
  };
}

export async function captureDebugPod(nodeName: string, image = AGENT_IMAGE): Promise<PodSpecLike> {
  const dir = mkdtempSync(join(tmpdir(), 'nodetruth-e2e-kubectl-'));
  const fake = await new FakeKubeApiServer({ tls: await fakeApiCert(dir, ['127.0.0.1']) }).start();
  try {
    fake.decodeProtobuf = decodePodProtobuf;
    fake.nodes = [apiNode(nodeName)];
    const kubeconfig = fake.writeKubeconfig(dir);
    await runOk(
      'kubectl',
      ['--kubeconfig', kubeconfig, ...(process.env.E2E_KV ? ['-v=8'] : []), 'debug', `node/${nodeName}`, '--profile=sysadmin', `--custom=${join(projectRoot, 'deploy', 'debug-profile.yaml')}`, `--image=${image}`, '--', 'nodetruth', 'serve'],
      { timeoutMs: 60_000, env: { ...process.env, HOME: dir } },
    );
    const pod = fake.created.at(-1) as PodSpecLike | undefined;
    if (!pod) throw new Error(`kubectl debug created no pod; requests: ${JSON.stringify(fake.requests.map((r) => `${r.method} ${r.url}`))}`);
    return pod;
  } finally {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function captureDaemonSetPod(nodeName: string): Promise<PodSpecLike> {
  const r = await runOk('kubectl', ['kustomize', join(projectRoot, 'deploy', 'daemonset')], { timeoutMs: 60_000 });
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as { kind?: string; metadata: { name: string; namespace?: string }; spec: any });
  const ds = docs.find((d) => d.kind === 'DaemonSet');
  if (!ds) throw new Error('kubectl kustomize deploy/daemonset has no DaemonSet');
  const tpl = ds.spec.template;
  return {
    metadata: {
      name: `${ds.metadata.name}-e2e01`,
      namespace: ds.metadata.namespace ?? 'default',
      uid: '7d1f0c2a-4b8e-4c55-9a3e-2e2e0d5e0002',
      labels: { ...(tpl.metadata?.labels ?? {}), 'controller-revision-hash': '6d5c8f7b9c', 'pod-template-generation': '1' },
      annotations: tpl.metadata?.annotations ?? {},
    },
    // the controller pins the pod to its node with node affinity; the scheduler then binds it
    spec: { ...tpl.spec, nodeName },
  };
}

if (process.argv[1]?.endsWith('kube-pods.ts')) {
  console.log(JSON.stringify({ debug: await captureDebugPod('node1'), daemonset: await captureDaemonSetPod('node1') }, null, 2));
}
