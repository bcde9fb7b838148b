/**
 * Secrets never leave the agent. The FAKE runtime serves containers whose env,
 * args and annotations hold secrets (and pods whose kubectl
 * last-applied-configuration annotation holds env values); the fake tree's
 * processes carry them in cmdline and environ. Every GET route that
 * /openapi.json lists is called (JSON, ?format=text, Accept: text/plain; path
 * parameters filled with real ids) with `Authorization: Bearer <random>` under
 * --auth kubernetes (a FAKE API server accepts the token): no output holds a
 * secret, and the agent's log (its audit lines) holds neither a secret nor the token.
 *
 * Beside the fake node's own secrets, the shapes that redaction by key name alone
 * misses and the 2,000-deep annotation are added to its
 * containers, pods and processes: mysql's `-pSECRET`, curl's `-H 'Authorization:
 * Bearer …'` and `--header=Cookie: …`, a positional `PASSWORD=…`, URL userinfo,
 * a shell script holding all of them, registry headers (`{"Authorization":
 * ["Basic …"]}`) and a document nested 2,000 deep with env values at the bottom.
 * Beside those, the shapes a later review found missing: `redis-cli -a`, `sshpass -p`,
 * `docker login -p`, `vault login TOKEN`, `--signing-key`/`--jwt=`/`--cred=`/
 * `--kubeconfig-data=`, and in annotation text a Go DSN, `Authorization: Basic`,
 * `X-Api-Key:` and a YAML `password:` line.
 * The FAKE runtime runs in this process, so it serves the node as changed here.
 *
 * GET /v1/bundle is not called in every format (it is a whole capture, every route at once,
 * and a gzip body a text scan cannot read): it is captured once, through the same auth,
 * and its decompressed archive, raw evidence included, is scanned for the same secrets.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import t from 'tap';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { apiPod, FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

const host = await makeFakeScaleHost({ pods: 6, perPod: 2, journal: true, logLines: 10 });
// those shapes, each with its own secret
const n = randomBytes(6).toString('hex');
const shape = {
  mysql: `FAKESHAPEmysql${n}`,
  bearer: `FAKESHAPEbearer${n}`,
  cookie: `FAKESHAPEcookie${n}`,
  positional: `FAKESHAPEpositional${n}`,
  url: `FAKESHAPEurl${n}`,
  script: `FAKESHAPEscript${n}`,
  header: `FAKESHAPEheader${n}`,
  deep: `FAKESHAPEdeep${n}`,
  // shapes a later review found missing: tools, flags, Go DSNs, headers and YAML in annotation text
  redis: `FAKESHAPEredis${n}`,
  sshpass: `FAKESHAPEsshpass${n}`,
  docker: `FAKESHAPEdocker${n}`,
  dsn: `FAKESHAPEdsn${n}`,
  flags: `FAKESHAPEflags${n}`,
  vault: `FAKESHAPEvault${n}`,
  basic: `FAKESHAPEbasic${n}`,
  apikey: `FAKESHAPEapikey${n}`,
  yaml: `FAKESHAPEyaml${n}`,
};
const secrets = [...host.secrets, ...Object.values(shape)];
const deep = `${'{"a":'.repeat(2000)}{"env":[{"name":"DB_PASSWORD","value":"${shape.deep}"}]}${'}'.repeat(2000)}`;
const hostile = {
  'example.com/deep': deep,
  'example.com/deep-array': `${'['.repeat(2000)}${']'.repeat(2000)}`,
  'example.com/upstream': `https://svc:${shape.url}@upstream.example.com/`,
  'example.com/registry': JSON.stringify({ headers: { Authorization: [`Basic ${shape.header}`] } }),
  'example.com/config': `db:\n  host: pg\n  password: ${shape.yaml}\n`,
  'example.com/notes': `call with Authorization: Basic ${shape.basic} or X-Api-Key: ${shape.apikey}; dsn app:${shape.dsn}@tcp(db:3306)/shop`,
};
for (const p of host.node.pods) p.annotations = { ...p.annotations, ...hostile };
for (const c of host.node.containers) {
  c.annotations = { ...c.annotations, ...hostile };
  c.args = [
    ...(c.args ?? []),
    `-p${shape.mysql}`,
    '-H', `Authorization: Bearer ${shape.bearer}`,
    `--header=Cookie: sid=${shape.cookie}`,
    `PASSWORD=${shape.positional}`,
    `postgres://app:${shape.url}@db:5432/shop`,
    `mysql -uroot -p${shape.script} shop && curl -H "X-Api-Key: ${shape.script}" https://u:${shape.script}@h/`,
    `redis-cli -a ${shape.redis} ping && sshpass -p ${shape.sshpass} ssh h; docker login -u ci -p ${shape.docker} reg && vault login ${shape.vault}`,
    '--signing-key', shape.flags, `--jwt=${shape.flags}`, `--cred=${shape.flags}`, `--kubeconfig-data=${shape.flags}`,
  ];
  // the processes' command lines say the same (the tree was written from the old args)
  if (c.pid) writeFileSync(path.join(host.root, 'proc', String(c.pid), 'cmdline'), `${c.args.join('\0')}\0`);
}
const started: { cri?: FakeCriServer; agent?: Awaited<ReturnType<typeof startAgentProcess>>; kube?: FakeKubeApiServer } = {};
t.teardown(async () => {
  await started.agent?.stop();
  await started.cri?.stop();
  await started.kube?.stop();
  host.cleanup();
});
const cri = (started.cri = new FakeCriServer(host.node));
await cri.start();
const kube = (started.kube = await new FakeKubeApiServer().start());
const token = `nt-${randomBytes(24).toString('base64url')}`;
kube.tokens.set(token, { username: 'oncall@example.com', groups: ['system:authenticated'] });
kube.authorize = () => ({ allowed: true });
kube.pods = host.node.pods.map((p) =>
  apiPod({ name: p.name, namespace: p.namespace, uid: p.uid, nodeName: 'fake-node', annotations: p.annotations ?? {}, containers: [{ name: 'c0', state: 'running' }] }),
);
const agent = (started.agent = await startAgentProcess([
  '--host-root', host.root,
  '--cri-endpoint', cri.endpoint,
  '--kmsg-path', host.kmsg,
  '--auth', 'kubernetes',
  '--kubeconfig', kube.writeKubeconfig(host.base),
  '--node-name', 'fake-node',
  '--kubelet-healthz', 'http://127.0.0.1:1/healthz',
  '--log-level', 'debug',
  // the FAKE runtime shares this process's event loop: on a loaded machine it can miss the 2 s
  // default, and a 504 would read as a failure here; the runtime's deadline is not this test's subject
  '--cri-timeout', '20s',
]));

const auth = { authorization: `Bearer ${token}` };
const get = (path: string, headers: Record<string, string> = {}) => fetch(`${agent.url}${path}`, { headers: { ...auth, ...headers } });

t.test('every GET route, in every format, shows no secret', async (t) => {
  t.equal((await fetch(`${agent.url}/v1/containers`)).status, 401, 'auth is on: no token, no answer');
  const doc = (await (await get('/openapi.json')).json()) as { paths: Record<string, { get?: unknown }> };
  const running = host.node.containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
  const exited = host.node.containers.find((c) => c.state === 'CONTAINER_EXITED')!;
  const pod = host.node.pods[0]!;
  const fill = (p: string): string[] => {
    if (p.startsWith('/v1/pods/')) return [p.replace('{id}', pod.id)];
    if (p.startsWith('/v1/cgroups/')) return [p.replace('{id}', pod.uid), p.replace('{id}', running.id)];
    if (p.includes('{id}')) return [p.replace('{id}', running.id), p.replace('{id}', exited.id), p.replace('{id}', pod.id)];
    return [p];
  };
  const extra: Record<string, string> = { '/v1/logs': 'query=kubelet&tailLines=50', '/v1/throttling': 'window=1s', '/v1/triage': 'window=1s' };
  const paths = Object.keys(doc.paths).filter((p) => doc.paths[p]!.get && p !== '/v1/bundle');
  let calls = 0;
  let bytes = 0;
  const leaks: string[] = [];
  const ok = new Set<string>();
  for (const p of paths) {
    for (const url of fill(p)) {
      const q = extra[p] ? `${extra[p]}&` : '';
      for (const [variant, path, headers] of [
        ['json', `${url}?${q}format=json`, {}],
        ['text', `${url}?${q}format=text`, {}],
        ['accept', `${url}${q ? `?${q.slice(0, -1)}` : ''}`, { accept: 'text/plain' }],
        ['plain', `${url}${q ? `?${q.slice(0, -1)}` : ''}`, {}],
      ] as const) {
        const res = await get(path, headers);
        const body = await res.text();
        calls++;
        bytes += body.length;
        if (res.status === 200) ok.add(p);
        if (res.status >= 500) leaks.push(`${path} (${variant}): status ${res.status} ${body.slice(0, 200)}`);
        for (const s of secrets) if (body.includes(s)) leaks.push(`${path} (${variant}): holds ${s}`);
        if (body.includes(token)) leaks.push(`${path} (${variant}): echoes the bearer token`);
      }
    }
  }
  t.comment(`${calls} calls over ${paths.length} routes, ${(bytes / 1024).toFixed(0)} KiB scanned; 200 from: ${[...ok].sort().join(' ')}`);
  t.same(leaks, [], 'no secret, no token, no 5xx in any output');
  // the scan means something only if the secrets were there to be found
  const raw = await get(`/v1/containers/${running.id}`);
  const rawText = await raw.text();
  t.match(rawText, /<redacted>/, 'the container status is where the secrets were, redacted');
  t.match(rawText, /nested deeper than/, 'the 2,000-deep annotation is there, cut at the bound');
  t.match(rawText, /-p<redacted>/, "mysql's -pSECRET is there, redacted");
});

t.test('a bundle of the node (GET /v1/bundle) holds no secret and no token, raw evidence included', async (t) => {
  const res = await get('/v1/bundle');
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/gzip');
  const archive = gunzipSync(Buffer.from(await res.arrayBuffer())).toString('latin1');
  t.match(archive, /manifest\.json/, 'a whole archive');
  t.match(archive, /<redacted>/, 'the secrets were there to be found, redacted');
  const leaks = secrets.filter((s) => archive.includes(s));
  t.same(leaks, [], 'no secret in the archive');
  t.notOk(archive.includes(token), 'the bearer token is not in the archive');
});

t.test('the agent log holds no bearer token and no secret', async (t) => {
  await new Promise((r) => setTimeout(r, 200)); // let the last audit lines arrive
  const log = [...agent.lines, ...agent.stderr].join('\n');
  const audits = agent.lines.filter((l) => l.includes('"audit"'));
  t.ok(audits.length > 50, `${audits.length} audit lines`);
  t.ok(audits.some((l) => l.includes('oncall@example.com')), 'audit lines name the user, not the token');
  t.notOk(log.includes(token), 'the token is not in the log');
  t.notOk(log.includes(token.slice(3, 20)), 'not even part of it');
  for (const s of secrets) t.notOk(log.includes(s), `secret ${s.slice(0, 18)}… is not in the log`);
});
