/**
 * deploy/: the kustomize DaemonSet bundle renders with the real kubectl (offline), every
 * document parses and has what Kubernetes requires for its kind, the pieces refer to each
 * other correctly (selectors, ports, service accounts, secrets, roles), and the flags they
 * pass are ones the agent's own config accepts. Also the kubectl debug profile and the
 * attach RBAC. (`kubectl apply --dry-run=client` needs an API server for discovery and
 * OpenAPI, so it cannot run here.)
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { loadConfig, tlsEnabled } from '../../src/config.js';
import { kubectlArgs, parseAttachArgs, REMOTE_PORT } from '../../src/launcher/attach.js';
import { DEFAULT_AGENT_PORT } from '../../src/fleet/options.js';
import { OPEN_ROUTES } from '../../src/server/plugins/auth.js';
import { ROUTE_RESOURCES } from '../../src/server/plugins/auth-decider.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NS = 'nodetruth';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, checked field by field
type Obj = Record<string, any>;

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
const NAMESPACED = new Set(['ServiceAccount', 'Secret', 'Service', 'DaemonSet', 'ServiceMonitor', 'Role', 'RoleBinding']);
const API_VERSION: Record<string, string> = {
  Namespace: 'v1',
  ServiceAccount: 'v1',
  Secret: 'v1',
  Service: 'v1',
  DaemonSet: 'apps/v1',
  ClusterRole: 'rbac.authorization.k8s.io/v1',
  ClusterRoleBinding: 'rbac.authorization.k8s.io/v1',
  Role: 'rbac.authorization.k8s.io/v1',
  RoleBinding: 'rbac.authorization.k8s.io/v1',
  ServiceMonitor: 'monitoring.coreos.com/v1',
};
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const IANA_SVC_NAME = /^(?=.{1,15}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
const VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']);

function parseDocs(text: string, what: string): Obj[] {
  const docs = parseAllDocuments(text);
  const out: Obj[] = [];
  for (const d of docs) {
    if (d.errors.length) throw new Error(`${what}: ${d.errors.map((e) => e.message).join('; ')}`);
    const v = d.toJS() as Obj | null;
    if (v !== null) out.push(v);
  }
  return out;
}

/** Kubernetes quantities → numbers (cpu in cores, memory in bytes). */
function quantity(q: string | number): number {
  const m = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`not a quantity: ${q}`);
  const mult: Record<string, number> = { m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? mult[m[2]]! : 1);
}

function checkResources(t: Test, r: Obj | undefined, what: string): void {
  t.ok(r?.requests && r?.limits, `${what}: requests and limits`);
  for (const res of ['cpu', 'memory']) {
    t.ok(r?.requests?.[res] !== undefined && r?.limits?.[res] !== undefined, `${what}: ${res} request and limit`);
    t.ok(quantity(r!.requests[res]) <= quantity(r!.limits[res]), `${what}: ${res} request <= limit`);
  }
}

/**
 * Memory limits against what bench/RESULTS.md measured (bench/all.ts with these
 * NODE_OPTIONS): the V8 heap caps NODE_OPTIONS sets plus the agent's resident memory outside
 * the heap (the Node binary's pages, code, native buffers: ~100 MiB measured) fit inside
 * the limit, and the limit covers the measured figure the manifest names.
 */
const NON_HEAP_MIB = 100;
function checkMemory(t: Test, env: Obj[], r: Obj, what: string, measuredMiB: number): void {
  const opts = String(env.find((e: Obj) => e.name === 'NODE_OPTIONS')?.value ?? '');
  const flag = (n: string) => Number(new RegExp(`--${n}=(\\d+)`).exec(opts)?.[1] ?? NaN);
  const oldMiB = flag('max-old-space-size');
  const semiMiB = flag('max-semi-space-size');
  t.ok(oldMiB > 0 && semiMiB > 0, `${what}: NODE_OPTIONS caps the old space and the semi-space (${opts})`);
  const limitMiB = quantity(r.limits.memory) / 1024 ** 2;
  // the young generation is three semi-spaces at most
  t.ok(oldMiB + 3 * semiMiB + NON_HEAP_MIB <= limitMiB, `${what}: heap caps + ${NON_HEAP_MIB} MiB outside the heap within the ${limitMiB} MiB limit`);
  t.ok(limitMiB >= measuredMiB, `${what}: the limit covers the measured ${measuredMiB} MiB`);
  t.equal(env.find((e: Obj) => e.name === 'MALLOC_MMAP_THRESHOLD_')?.value, '32768', `${what}: big buffers returned to the system when freed`);
}

const matches = (selector: Obj, labels: Obj) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);

async function kustomize(dir: string): Promise<Obj[] | null> {
  try {
    const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, dir)]);
    return parseDocs(stdout, dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Generic checks every object must pass. */
function checkObject(t: Test, o: Obj, ns = NS): void {
  const id = `${o.kind}/${o.metadata?.name}`;
  t.equal(o.apiVersion, API_VERSION[o.kind], `${id}: apiVersion`);
  t.match(o.metadata?.name, DNS1123_SUBDOMAIN, `${id}: metadata.name`);
  if (CLUSTER_SCOPED.has(o.kind)) t.equal(o.metadata.namespace, undefined, `${id}: cluster-scoped, no namespace`);
  else if (NAMESPACED.has(o.kind)) t.equal(o.metadata.namespace, ns, `${id}: namespace`);
  else t.fail(`${id}: a kind this test does not know`);
  for (const [k, v] of Object.entries<string>(o.metadata.labels ?? {})) {
    t.match(k, LABEL_KEY, `${id}: label key ${k}`);
    t.match(String(v), LABEL_VALUE, `${id}: label value ${v}`);
  }
}

function checkRules(t: Test, o: Obj): void {
  t.ok(Array.isArray(o.rules) && o.rules.length > 0, `${o.kind}/${o.metadata.name}: rules`);
  for (const r of o.rules) {
    t.ok(Array.isArray(r.apiGroups) && Array.isArray(r.resources) && r.resources.length > 0 && Array.isArray(r.verbs) && r.verbs.length > 0, 'rule has apiGroups, resources, verbs');
    for (const v of r.verbs) t.ok(VERBS.has(v), `verb ${v}`);
  }
}

const grants = (role: Obj, group: string, resource: string, verb: string) =>
  role.rules.some((r: Obj) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));

/** Every (group, resource, verb) a role grants, as "group/resource:verb" strings. */
const granted = (role: Obj) => new Set<string>(role.rules.flatMap((r: Obj) => r.apiGroups.flatMap((g: string) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${g}/${res}:${v}`)))));

/**
 * The client-node calls the agent makes, and the permission each needs. The test reads
 * src/readers/kube/api.ts for calls on its API clients: a call missing here fails the test
 * (add it, and to the ClusterRole), and the ClusterRole may grant nothing else.
 */
const API_CALL_PERMISSIONS: Record<string, string> = {
  listPodForAllNamespaces: '/pods:list',
  createTokenReview: 'authentication.k8s.io/tokenreviews:create',
  createSubjectAccessReview: 'authorization.k8s.io/subjectaccessreviews:create',
};

t.test('deploy/daemonset renders with kubectl kustomize, and every object is well-formed', async (t) => {
  const docs = await kustomize('deploy/daemonset');
  if (!docs) return void t.comment('skipped: no kubectl on PATH');
  const core = (await kustomize('deploy/daemonset/core'))!;
  t.same(
    core.map((d) => `${d.kind}/${d.metadata.name}`),
    docs.filter((d) => d.kind !== 'ServiceMonitor').map((d) => `${d.kind}/${d.metadata.name}`),
    'core is the same bundle without the ServiceMonitor',
  );
  const kinds = docs.map((d) => d.kind).sort();
  t.same(kinds, ['ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'DaemonSet', 'Namespace', 'Secret', 'Service', 'ServiceAccount', 'ServiceAccount', 'ServiceMonitor']);
  for (const o of docs) checkObject(t, o);
  const one = (kind: string, name?: string) => {
    const found = docs.filter((d) => d.kind === kind && (!name || d.metadata.name === name));
    t.equal(found.length, 1, `one ${kind}${name ? `/${name}` : ''}`);
    return found[0]!;
  };
  const sas = new Set(docs.filter((d) => d.kind === 'ServiceAccount').map((d) => d.metadata.name as string));

  // Namespace: Pod Security admits privileged pods
  const ns = one('Namespace');
  t.equal(ns.metadata.name, NS);
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'privileged');

  // RBAC: rules well-formed; bindings point at roles and service accounts that exist
  const roles = new Map(docs.filter((d) => d.kind === 'ClusterRole').map((d) => [d.metadata.name as string, d]));
  for (const r of roles.values()) checkRules(t, r);
  for (const b of docs.filter((d) => d.kind === 'ClusterRoleBinding')) {
    t.same(Object.keys(b.roleRef).sort(), ['apiGroup', 'kind', 'name']);
    t.equal(b.roleRef.apiGroup, 'rbac.authorization.k8s.io');
    t.equal(b.roleRef.kind, 'ClusterRole');
    t.ok(roles.has(b.roleRef.name), `${b.metadata.name}: roleRef names a ClusterRole of the bundle`);
    for (const s of b.subjects) {
      t.equal(s.kind, 'ServiceAccount');
      t.equal(s.namespace, NS);
      t.ok(sas.has(s.name), `subject ${s.name} exists`);
    }
  }
  // The agent's ClusterRole: exactly what the code calls, nothing more
  const agentRole = roles.get('nodetruth')!;
  const apiSource = readFileSync(path.join(ROOT, 'src/readers/kube/api.ts'), 'utf8');
  const calls = new Set([...apiSource.matchAll(/this\.(?:core|authn|authz)\.(\w+)\(/g)].map((m) => m[1]!));
  t.ok(calls.size > 0, 'found the API calls in src/readers/kube/api.ts');
  for (const c of calls) t.ok(c in API_CALL_PERMISSIONS, `API call ${c} has a known permission`);
  // lists the agent makes with its own size-capped GET: a core resource's collection path
  const eventsSource = readFileSync(path.join(ROOT, 'src/readers/kube/events.ts'), 'utf8');
  const lists = new Set([...eventsSource.matchAll(/\/api\/v1\$\{.*?\}\/(\w+)\?/g)].map((m) => `/${m[1]}:list`));
  t.same([...lists], ['/events:list'], 'found the Events list in src/readers/kube/events.ts');
  t.same([...granted(agentRole)].sort(), [...new Set([...[...calls].map((c) => API_CALL_PERMISSIONS[c]!), ...lists])].sort(), 'agent ClusterRole = the permissions of the calls the code makes');
  t.notOk(grants(agentRole, '', 'pods', 'watch') || grants(agentRole, '', 'nodes', 'get'), 'no watch, no node reads: no code uses them');
  for (const r of agentRole.rules) t.notOk(r.verbs.some((v: string) => ['update', 'patch', 'delete', 'deletecollection'].includes(v) || (v === 'create' && !/reviews$/.test(r.resources[0]))), 'agent: nothing that writes');
  for (const r of agentRole.rules) t.notOk(r.resources.includes('*') || r.verbs.includes('*') || r.apiGroups.includes('*'), 'agent: no wildcards');

  // Callers: the reader role grants exactly the check --auth kubernetes makes by default, and not nodes/proxy
  const { config: defaults } = loadConfig([], { NODE_NAME: 'node-1' });
  t.equal(defaults.authResource, 'nodes/nodetruth', 'a dedicated subresource of nodes');
  const reader = roles.get('nodetruth-reader')!;
  t.same([...granted(reader)], [`/${defaults.authResource}:get`], 'nodetruth-reader: get nodes/nodetruth and nothing else');
  for (const r of roles.values()) t.notOk(grants(r, '', 'nodes/proxy', 'get') || grants(r, '', 'nodes/proxy', 'create'), `${r.metadata.name}: no nodes/proxy (the kubelet API)`);

  // The scraper may pass the check --auth kubernetes makes for /metrics, and no more
  const metricsResource = ROUTE_RESOURCES.get('/metrics')!;
  const scraperBinding = one('ClusterRoleBinding', 'nodetruth-scraper');
  const scraperRole = roles.get(scraperBinding.roleRef.name)!;
  t.ok(grants(scraperRole, '', metricsResource, 'get'), `scraper: get ${metricsResource}`);
  const { config } = loadConfig([], { NODE_NAME: 'node-1' });
  t.notOk(grants(scraperRole, '', config.authResource, 'get'), `scraper: not ${config.authResource}`);
  const secret = one('Secret');
  t.equal(secret.type, 'kubernetes.io/service-account-token');
  t.equal(secret.metadata.annotations['kubernetes.io/service-account.name'], 'nodetruth-scraper');
  t.ok(sas.has('nodetruth-scraper'));

  // DaemonSet
  const ds = one('DaemonSet');
  const tpl = ds.spec.template;
  const pod = tpl.spec;
  t.ok(Object.keys(ds.spec.selector.matchLabels).length > 0, 'selector');
  t.ok(matches(ds.spec.selector.matchLabels, tpl.metadata.labels), 'selector matches the template labels');
  t.ok(sas.has(pod.serviceAccountName), 'serviceAccountName exists');
  t.equal(pod.hostPID, true, 'hostPID');
  t.ok(pod.tolerations.some((x: Obj) => x.operator === 'Exists' && x.key === undefined && x.effect === undefined), 'tolerates every taint');
  t.equal(pod.containers.length, 1);
  const c = pod.containers[0];
  t.match(c.name, DNS1123_LABEL);
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  t.equal(c.image, `ghcr.io/nodetruth/nodetruth:${pkg.version}`, 'the image of this version (kustomization images:)');
  t.equal(c.image, parseAttachArgs(['node-1'], {}).image, 'the same image attach uses by default');
  checkResources(t, c.resources, 'DaemonSet container');
  // peak under 50 connections on the 3,000-container FAKE node
  checkMemory(t, c.env, c.resources, 'DaemonSet container', 337);
  const portNames = new Set<string>(c.ports.map((p: Obj) => p.name));
  for (const p of c.ports) {
    t.match(p.name, IANA_SVC_NAME, 'port name');
    t.ok(p.containerPort > 0 && p.containerPort < 65536);
  }
  for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
    t.ok(portNames.has(probe.httpGet.port) || c.ports.some((p: Obj) => p.containerPort === probe.httpGet.port), 'probe port is a container port');
    t.ok(OPEN_ROUTES.has(probe.httpGet.path), `probe path ${probe.httpGet.path} is open under --auth kubernetes (probes send no token)`);
    t.equal(probe.httpGet.scheme, 'HTTPS', 'the probe speaks TLS to a TLS port (the kubelet does not verify it)');
  }
  const envNames = new Set<string>(c.env.map((e: Obj) => e.name));
  t.same(c.env.find((e: Obj) => e.name === 'NODE_NAME').valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } }, 'NODE_NAME from the downward API');
  for (const a of c.args) for (const m of String(a).matchAll(/\$\((\w+)\)/g)) t.ok(envNames.has(m[1]!), `$(${m[1]}) is defined in env`);
  // the args and env are ones `nodetruth serve` accepts, with a non-loopback address and auth
  const env = Object.fromEntries(c.env.filter((e: Obj) => 'value' in e).map((e: Obj) => [e.name, e.value]));
  const args = (c.args as string[]).map((a) => a.replace('$(POD_IP)', '10.0.3.17'));
  t.equal(args[0], 'serve');
  const served = loadConfig(args.slice(1), { ...env, NODE_NAME: 'node-1' }).config;
  t.same(served.listen, { host: '10.0.3.17', port: 7070 });
  // and the node's loopback, where a port-forward to this hostNetwork pod arrives: fleet's
  // default port, not attach's (its debug pods take 127.0.0.1:REMOTE_PORT on the same node)
  t.same(served.listenAddresses, [{ host: '10.0.3.17', port: 7070 }, { host: '127.0.0.1', port: DEFAULT_AGENT_PORT }], "the node's address and fleet's loopback port");
  t.not(DEFAULT_AGENT_PORT, REMOTE_PORT, "attach's loopback port stays free");
  t.notOk(c.ports.some((p: Obj) => p.containerPort === DEFAULT_AGENT_PORT), 'the loopback port is no containerPort (a host port on every address under hostNetwork)');
  t.equal(served.auth, 'kubernetes');
  t.equal(served.hostRoot, '/host');
  t.ok(tlsEnabled(served), 'serves TLS');
  t.ok(args.includes('--tls=on'), 'says so: --tls=on');
  t.equal(served.tlsCertFile, null, 'a self-signed certificate unless deploy/daemonset/tls-secret is used');
  t.same(c.env.find((e: Obj) => e.name === 'NODE_IP').valueFrom, { fieldRef: { fieldPath: 'status.hostIP' } }, 'NODE_IP (a SAN of the self-signed certificate) from the downward API');
  // the Secret's mount: optional, read-only, where the tls-secret variant points
  const tlsMount = c.volumeMounts.find((m: Obj) => m.name === 'tls');
  t.same(tlsMount, { name: 'tls', mountPath: '/etc/nodetruth/tls', readOnly: true });
  t.match(pod.volumes.find((v: Obj) => v.name === 'tls'), { secret: { secretName: 'nodetruth-tls', optional: true } }, 'the pod starts without the Secret');
  // the host root, read-only
  const volumes = new Map<string, Obj>(pod.volumes.map((v: Obj) => [v.name, v]));
  for (const m of c.volumeMounts) t.ok(volumes.has(m.name), `volumeMount ${m.name} has a volume`);
  const hostMount = c.volumeMounts.find((m: Obj) => m.mountPath === '/host');
  t.equal(volumes.get(hostMount.name)!.hostPath.path, '/');
  t.equal(hostMount.readOnly, true, 'host root mounted read-only');
  if (hostMount.recursiveReadOnly) t.ok(hostMount.mountPropagation === undefined || hostMount.mountPropagation === 'None', 'recursiveReadOnly needs mountPropagation None');
  t.equal(c.securityContext.readOnlyRootFilesystem, true);

  // Service and ServiceMonitor
  const svc = one('Service');
  t.ok(matches(svc.spec.selector, tpl.metadata.labels), 'Service selects the DaemonSet pods');
  for (const p of svc.spec.ports) {
    t.match(p.name, IANA_SVC_NAME);
    t.ok(portNames.has(p.targetPort) || c.ports.some((x: Obj) => x.containerPort === p.targetPort), 'targetPort is a container port');
  }
  const sm = one('ServiceMonitor');
  t.ok(matches(sm.spec.selector.matchLabels, svc.metadata.labels), 'ServiceMonitor selects the Service');
  const ep = sm.spec.endpoints[0];
  t.ok(svc.spec.ports.some((p: Obj) => p.name === ep.port), 'endpoint port is a Service port name');
  t.equal(ep.path, '/metrics');
  t.equal(ep.scheme, 'https', 'scrapes over TLS: the token is not sent in clear');
  t.equal(ep.authorization.type, 'Bearer');
  t.equal(ep.authorization.credentials.name, secret.metadata.name, 'bearer token from the scraper Secret');
  t.equal(ep.authorization.credentials.key, 'token', 'service-account-token Secrets hold the token under "token"');
});

t.test('deploy/daemonset/tls-secret: the same bundle, serving the certificate of the Secret nodetruth-tls', async (t) => {
  const docs = await kustomize('deploy/daemonset/tls-secret');
  if (!docs) return void t.comment('skipped: no kubectl on PATH');
  const core = (await kustomize('deploy/daemonset/core'))!;
  t.same(docs.map((d) => `${d.kind}/${d.metadata.name}`), core.map((d) => `${d.kind}/${d.metadata.name}`), 'the core objects');
  const ds = docs.find((d) => d.kind === 'DaemonSet')!;
  const c = ds.spec.template.spec.containers[0];
  const env = Object.fromEntries(c.env.filter((e: Obj) => 'value' in e).map((e: Obj) => [e.name, e.value]));
  const mount = c.volumeMounts.find((m: Obj) => m.name === 'tls').mountPath;
  t.equal(env.NODETRUTH_TLS_CERT_FILE, `${mount}/tls.crt`, 'kubernetes.io/tls Secrets hold tls.crt');
  t.equal(env.NODETRUTH_TLS_KEY_FILE, `${mount}/tls.key`, 'and tls.key');
  const args = (c.args as string[]).map((a) => a.replace('$(POD_IP)', '10.0.3.17'));
  const served = loadConfig(args.slice(1), { ...env, NODE_NAME: 'node-1' }).config;
  t.same([served.tlsCertFile, served.tlsKeyFile], [env.NODETRUTH_TLS_CERT_FILE, env.NODETRUTH_TLS_KEY_FILE]);
  t.ok(tlsEnabled(served));
});

t.test('the kubectl debug profile: a partial container kubectl accepts, matching the launcher', async (t) => {
  const text = readFileSync(path.join(ROOT, 'deploy/debug-profile.yaml'), 'utf8');
  const p = parseYaml(text) as Obj;
  t.type(p, 'object');
  // kubectl debug refuses these in a custom profile (pkg/cmd/debug/debug.go, Validate)
  for (const f of ['name', 'command', 'image', 'lifecycle', 'volumeDevices']) t.notOk(f in p, `no ${f}`);
  const CONTAINER_FIELDS = new Set(['args', 'env', 'envFrom', 'imagePullPolicy', 'livenessProbe', 'ports', 'readinessProbe', 'resources', 'securityContext', 'startupProbe', 'stdin', 'stdinOnce', 'terminationMessagePath', 'terminationMessagePolicy', 'tty', 'volumeMounts', 'workingDir', 'resizePolicy', 'restartPolicy']);
  for (const k of Object.keys(p)) t.ok(CONTAINER_FIELDS.has(k), `${k} is a Container field`);
  const env = new Map<string, Obj>(p.env.map((e: Obj) => [e.name, e]));
  t.equal(env.get('NODETRUTH_HOST_ROOT')?.value, '/host', 'where the sysadmin profile mounts the host root');
  t.same(env.get('NODE_NAME')?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } });
  checkResources(t, p.resources, 'debug profile');
  // idle after one request to each full-node route at 3,000 containers; peak under 50 connections at 1,000
  checkMemory(t, p.env, p.resources, 'debug profile', 187);
  t.ok(quantity(p.resources.limits.memory) >= 256 * 1024 ** 2, 'room for Node and the agent');
  // merges (by mountPath) into kubectl's own host-root mount (pkg/cmd/debug/profiles.go, mountRootPartition)
  t.same(p.volumeMounts, [{ name: 'host-root', mountPath: '/host', readOnly: true, recursiveReadOnly: 'IfPossible' }], 'the host root, read-only');
  t.equal(p.readinessProbe.httpGet.port, REMOTE_PORT, 'probe on the port the launcher forwards');
  t.equal(p.readinessProbe.httpGet.host, '127.0.0.1', 'loopback: the pod is in the host network');
  t.ok(OPEN_ROUTES.has(p.readinessProbe.httpGet.path));
  // what the debug pod runs is a command the agent accepts, and it listens where the probe looks
  const debug = kubectlArgs(parseAttachArgs(['node-1'], {})).debug('profile.json');
  const cmd = debug.slice(debug.indexOf('--') + 1);
  t.same(cmd.slice(0, 2), ['nodetruth', 'serve']);
  const { config } = loadConfig(cmd.slice(2), { NODETRUTH_HOST_ROOT: '/host', NODE_NAME: 'node-1' });
  t.same(config.listen, { host: '127.0.0.1', port: REMOTE_PORT });
  t.equal(config.auth, 'none', 'loopback only, reached through port-forward');
});

const ATTACH_NS = 'nodetruth-attach';

t.test('deploy/attach-rbac.yaml grants what the launcher runs, and nothing on other namespaces', async (t) => {
  const docs = parseDocs(readFileSync(path.join(ROOT, 'deploy/attach-rbac.yaml'), 'utf8'), 'attach-rbac');
  for (const o of docs) {
    checkObject(t, o, ATTACH_NS);
    if (o.kind === 'Role' || o.kind === 'ClusterRole') checkRules(t, o);
  }
  const nodes = docs.find((d) => d.kind === 'ClusterRole')!;
  const role = docs.find((d) => d.kind === 'Role')!;
  t.ok(grants(nodes, '', 'nodes', 'get'), 'kubectl debug node/ reads the node');
  t.notOk(nodes.rules.some((r: Obj) => r.resources.some((x: string) => x.startsWith('pods'))), 'no pod rights cluster-wide');
  for (const [res, verb] of [
    ['pods', 'create'],
    ['pods', 'patch'],
    ['pods', 'get'],
    ['pods', 'watch'],
    ['pods', 'delete'],
    ['pods/portforward', 'create'],
    ['pods/log', 'get'],
  ] as const) {
    t.ok(grants(role, '', res, verb), `${verb} ${res}`);
  }
});

t.test("the attach Role cannot create pods under the agent's ServiceAccount or mount its Secrets: none are in its namespace", async (t) => {
  const attach = parseDocs(readFileSync(path.join(ROOT, 'deploy/attach-rbac.yaml'), 'utf8'), 'attach-rbac');
  const role = attach.find((d) => d.kind === 'Role')!;
  const nodes = attach.find((d) => d.kind === 'ClusterRole')!;
  // where the DaemonSet's identities live: the namespace kustomize gives every core object
  const kz = parseYaml(readFileSync(path.join(ROOT, 'deploy/daemonset/core/kustomization.yaml'), 'utf8')) as Obj;
  const core = (kz.resources as string[]).flatMap((f) => parseDocs(readFileSync(path.join(ROOT, 'deploy/daemonset/core', f), 'utf8'), f));
  const agentNs = kz.namespace as string;
  const ds = core.find((d) => d.kind === 'DaemonSet')!;
  t.ok(core.some((d) => d.kind === 'ServiceAccount' && d.metadata.name === ds.spec.template.spec.serviceAccountName), "the agent's ServiceAccount is in core");
  t.ok(core.some((d) => d.kind === 'Secret'), 'the scraper token Secret is in core');

  // RBAC cannot restrict a pod's serviceAccountName or volumes: pods may be created only
  // where there is no ServiceAccount with rights and no Secret to mount
  t.equal(role.metadata.namespace, ATTACH_NS);
  t.not(role.metadata.namespace, agentNs, "not the namespace of the agent's ServiceAccount and Secrets");
  t.ok(attach.some((d) => d.kind === 'Namespace' && d.metadata.name === ATTACH_NS), 'its own namespace, created here');
  const ns = attach.find((d) => d.kind === 'Namespace')!;
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'privileged', 'which admits the debug pod');
  t.same(
    attach.filter((d) => d.kind === 'ServiceAccount').map((d) => [d.metadata.name, d.automountServiceAccountToken]),
    [['default', false]],
    'its one ServiceAccount, default, mounts no token into the debug pod',
  );
  t.notOk(attach.some((d) => d.kind === 'Secret' || d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding'), 'no Secret, and no binding of anything to an identity there');

  // exactly what the launcher runs (src/launcher/kubectl.ts), nothing that hands out an identity
  t.same(
    [...granted(role)].sort(),
    ['/pods/log:get', '/pods/portforward:create', '/pods:create', '/pods:delete', '/pods:get', '/pods:list', '/pods:patch', '/pods:watch'],
    'pods of its namespace, their port-forward and log',
  );
  t.same([...granted(nodes)], ['/nodes:get'], 'cluster-wide: reading nodes only');
  for (const r of [...role.rules, ...nodes.rules]) {
    for (const x of [...r.apiGroups, ...r.resources, ...r.verbs]) t.not(x, '*', 'no wildcard');
    t.notOk(r.resources.some((x: string) => /^(secrets|serviceaccounts|pods\/(exec|attach|ephemeralcontainers))/.test(x)), `no secrets, service accounts, exec: ${r.resources}`);
  }
});
