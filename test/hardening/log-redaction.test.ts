/**
 * Redaction at the exits, through the real HTTP server and a real capture: every
 * copy of a value leaves the agent as redacted as every other.
 *
 * The FAKE node (test/fixtures/fake-node.ts) is given, with the real shapes:
 * - a real journal (systemd-journal-remote) whose kubelet and containerd records hold
 *   `Authorization: Bearer <jwt>`, a registry URL with `?token=…` and a probe URL
 *   with `user:password@`;
 * - a container's CRI log file whose lines hold `?token=…`, `password=…` and
 *   `Authorization: Basic …`;
 * - a kernel log record a process wrote with a URL password;
 * - the runtime's NetworkReady=false, with a Calico conflist in /etc/cni/net.d holding
 *   `etcd_password` and `k8s_auth_token` (and a second conflist cut mid-file, its
 *   secret at the cut).
 * Live: /v1/logs, /v1/kernel, /v1/containers/{id}/logs and /v1/triage (JSON and text) show no
 * secret and show the marker. Bundle: the stored route answers (api/v1/logs*,
 * api/v1/containers/<id>/logs@…, api/v1/triage*) hold neither, nor does any other
 * entry, and the manifest's counts are the markers the entries really hold.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, createWriteStream, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { captureBundle } from '../../src/bundle/capture.js';
import { countRedacted, MANIFEST_NAME } from '../../src/bundle/format.js';
import { readBundle } from '../../src/bundle/read.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { containerd, JOURNAL_REMOTE, kubelet, writeJournal } from '../fixtures/journal/gen.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const haveJournal = existsSync(JOURNAL_REMOTE);
const host = await makeFakeScaleHost({ pods: 2, perPod: 1, logLines: 5 });
const n = randomBytes(6).toString('hex');
const S = {
  bearer: `eyJhbGciOiJSUzI1NiIsImtpZCI6IkZBS0UifQ.FAKEJOURNALBEARER${n}.c2ln`,
  registryToken: `FAKEREGTOKEN${n}`,
  probePassword: `FAKEPROBEPW${n}`,
  podToken: `FAKEPODTOKEN${n}`,
  podPassword: `FAKEPODPW${n}`,
  podBasic: Buffer.from(`admin:FAKEPODBASIC${n}`).toString('base64'),
  etcd: `FAKEETCDPW${n}`,
  k8s: `FAKEK8STOKEN${n}`,
  cut: `FAKECUTPW${n}`,
  kernel: `FAKEKMSGPW${n}`,
};
const secrets = Object.values(S);

// the journal: kubelet and containerd as they log on a node
if (haveJournal) {
  const mono = Number(process.hrtime.bigint() / 1000n);
  await writeJournal(path.join(host.root, 'var/log/journal'), 'system', [
    kubelet({ boot: 2, monoUs: mono - 3_000_000, severity: 'E', text: `round_trippers.go:466] "Request" verb="GET" url="https://10.96.0.1:443/api/v1/nodes/node-a" headers="Authorization: Bearer ${S.bearer}"` }),
    containerd({ boot: 2, monoUs: mono - 2_000_000, level: 'info', msg: `fetch response received host=reg.example.com url="https://reg.example.com/v2/shop/web/manifests/1.2?scope=repository%3Ashop%2Fweb%3Apull&service=reg&token=${S.registryToken}"` }),
    kubelet({ boot: 2, monoUs: mono - 1_000_000, severity: 'I', text: `prober.go:107] "Probe failed" probeType="Liveness" pod="shop/web-0" output="Get \\"https://app:${S.probePassword}@10.244.1.7:8443/healthz\\": context deadline exceeded"` }),
  ]);
}
// a container's CRI log, lines as an app writes them
const c = host.node.containers.find((x) => x.state === 'CONTAINER_RUNNING')!;
const pod = host.node.pods.find((p) => p.id === c.podSandboxId)!;
const logFile = path.join(host.root, `var/log/pods/${pod.namespace}_${pod.name}_${pod.uid}/${c.name}/${c.attempt}.log`);
const at = new Date().toISOString().replace(/Z$/, '123456Z');
appendFileSync(
  logFile,
  [
    `${at} stdout F 10.0.0.9 - - "GET /v1/export?format=csv&token=${S.podToken} HTTP/1.1" 200 5120`,
    `${at} stderr F connecting with DB_PASSWORD=${S.podPassword} host=db`,
    `${at} stdout F upstream call: Authorization: Basic ${S.podBasic}`,
    '',
  ].join('\n'),
);
// the kernel log: a root process may write any line to /dev/kmsg (facility user, as syslog(3) tags it)
appendFileSync(host.kmsg, `12,99990,99990000,-;db-migrate[4242]: retrying postgres://migrator:${S.kernel}@10.0.0.7:5432/shop\n`);
// CNI: Calico's conflist (etcd datastore) and one cut mid-file, its secret at the cut
const netd = path.join(host.root, 'etc/cni/net.d');
mkdirSync(netd, { recursive: true });
mkdirSync(path.join(host.root, 'opt/cni/bin'), { recursive: true });
writeFileSync(
  path.join(netd, '10-calico.conflist'),
  `${JSON.stringify(
    {
      name: 'k8s-pod-network',
      cniVersion: '0.3.1',
      plugins: [
        {
          type: 'calico',
          datastore_type: 'etcdv3',
          etcd_endpoints: 'https://10.0.0.2:2379',
          etcd_username: 'calico',
          etcd_password: S.etcd,
          policy: { type: 'k8s', k8s_api_root: 'https://10.96.0.1:443', k8s_auth_token: S.k8s },
          ipam: { type: 'calico-ipam' },
          kubernetes: { kubeconfig: '/etc/cni/net.d/calico-kubeconfig' },
        },
        { type: 'portmap', snat: true, capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`,
);
writeFileSync(path.join(netd, '20-cut.conflist'), `{"name":"k8s-pod-network","cniVersion":"0.3.1","plugins":[{"type":"calico","etcd_password":"${S.cut}`);

const cri = new FakeCriServer(host.node);
cri.statusReply = {
  status: {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
    ],
  },
};
await cri.start();
const agent = await testApp(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'node-a']);
t.teardown(async () => {
  await agent.close();
  await cri.stop();
  host.cleanup();
});
const get = (url: string) => agent.app.inject({ method: 'GET', url, headers: { host: '127.0.0.1' } });
const leaks = (body: string) => secrets.filter((s) => body.includes(s));

t.test('/v1/logs: journal records leave without their bearer token, ?token= or URL password', { skip: haveJournal ? false : `no ${JOURNAL_REMOTE} to write a real journal` }, async (t) => {
  for (const url of ['/v1/logs', '/v1/logs?format=text', '/v1/logs?query=kubelet&query=containerd&tailLines=50']) {
    const r = await get(url);
    t.equal(r.statusCode, 200, `${url}: ${r.body.slice(0, 200)}`);
    t.same(leaks(r.body), [], `${url}: no secret`);
    t.match(r.body, /Authorization: Bearer <redacted>/, `${url}: the header is kept, its token is not`);
    t.match(r.body, /token=<redacted>/);
    t.match(r.body, /https:\/\/app:<redacted>@10\.244\.1\.7/);
  }
  // a pattern matches what is shown: it cannot find a redacted value by trying it
  const probe = await get(`/v1/logs?pattern=${encodeURIComponent('probe')}&format=text`);
  t.equal(probe.statusCode, 200);
  t.same(leaks(probe.body), []);
});

t.test('/v1/containers/{id}/logs: lines leave without ?token=, password= or Basic credentials', async (t) => {
  for (const url of [`/v1/containers/${c.id}/logs`, `/v1/containers/${c.id}/logs?format=text`, `/v1/containers/${c.id}/logs?tailLines=3&timestamps=true&format=text`]) {
    const r = await get(url);
    t.equal(r.statusCode, 200, `${url}: ${r.body.slice(0, 200)}`);
    t.same(leaks(r.body), [], `${url}: no secret`);
    t.match(r.body, /token=<redacted> HTTP\/1\.1/);
    t.match(r.body, /DB_PASSWORD=<redacted> host=db/);
    t.match(r.body, /Authorization: Basic <redacted>/);
  }
});

t.test('/v1/kernel: a record written by a process leaves without its URL password', async (t) => {
  for (const url of ['/v1/kernel', '/v1/kernel?format=text', '/v1/kernel?pattern=migrator']) {
    const r = await get(url);
    t.equal(r.statusCode, 200, `${url}: ${r.body.slice(0, 200)}`);
    t.same(leaks(r.body), [], `${url}: no secret`);
    t.match(r.body, /postgres:\/\/migrator:<redacted>@10\.0\.0\.7/);
  }
});

t.test('/v1/triage: NetworkReady=false quotes the CNI configs without their credentials', async (t) => {
  const r = await get('/v1/triage?window=1s');
  t.equal(r.statusCode, 200, r.body.slice(0, 300));
  const f = (r.json().findings as { id: string; evidence: { path?: string; excerpt?: string }[]; detail: string }[]).find((x) => x.id === 'network-not-ready');
  t.ok(f, 'the finding is there');
  const calico = f!.evidence.find((e) => e.path?.endsWith('10-calico.conflist'));
  t.match(calico?.excerpt, /"etcd_password":"<redacted>"/, 'the conflist is quoted, redacted by key');
  t.match(calico?.excerpt, /"etcd_username":"calico"/, 'the rest of it stands');
  const cut = f!.evidence.find((e) => e.path?.endsWith('20-cut.conflist'));
  t.match(cut?.excerpt, /^not JSON: .*"etcd_password":"<redacted>/s, 'a file that does not parse: the text rules, then the cut');
  t.same(leaks(r.body), [], 'JSON: no secret');
  const text = await get('/v1/triage?window=1s&format=text');
  t.equal(text.statusCode, 200);
  t.match(text.body, /network-not-ready|NetworkReady=false/);
  t.same(leaks(text.body), [], 'text: no secret');
});

t.test('a capture holds no secret in any entry, route answers included; its counts are the markers it holds', async (t) => {
  const file = path.join(host.base, 'capture.tar.gz');
  const manifest = await captureBundle({ app: agent.app, deps: agent.deps, sinceMs: 3600_000 * 24 * 365 * 10, argv: ['nodetruth', 'capture'] }, createWriteStream(file));
  const b = await readBundle(file);
  const names = [...b.entries.keys()];
  const logEntries = names.filter((name) => name.startsWith('api/v1/logs') || (name.startsWith(`api/v1/containers/${c.id}/logs`) && !name.includes('follow')));
  if (haveJournal) t.ok(logEntries.some((name) => name.startsWith('api/v1/logs')), `the journal route is stored (${logEntries.join(', ')})`);
  t.ok(logEntries.some((name) => name.startsWith(`api/v1/containers/${c.id}/logs@`)), 'the container log route is stored');
  for (const name of logEntries) {
    const body = b.entries.get(name)!.toString('utf8');
    t.same(leaks(body), [], `${name}: no secret`);
    t.ok(countRedacted(body) > 0, `${name}: the markers are there`);
  }
  for (const [name, body] of b.entries) t.same(leaks(body.toString('latin1')), [], `${name}: no secret`);
  // the manifest counts what the entries hold: per section, and in total
  let held = 0;
  for (const [name, body] of b.entries) if (name !== MANIFEST_NAME) held += countRedacted(body.toString('latin1'));
  t.equal(manifest.redaction.total, held, `the manifest's total (${manifest.redaction.total}) is the markers the entries hold`);
  for (const s of manifest.sections.filter((x) => x.path && !x.path.endsWith('/'))) {
    t.equal(s.redacted, countRedacted(b.entries.get(s.path!)!.toString('latin1')), `${s.path}: its count`);
  }
  t.ok(manifest.redaction.byKind.route! > 0 && manifest.redaction.byKind.podlog! > 0, 'route answers and log tails both counted');
  if (haveJournal) t.ok(manifest.redaction.byKind.journal! > 0, 'the raw journal counted');
});

