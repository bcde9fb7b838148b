/**
 * Deep documents through the real HTTP server: a pod annotation nested
 * 2,000 levels deep (about 4 KB; any pod author can set one, and kubelet hands
 * annotations to the runtime) must not make /v1/pods, /v1/containers,
 * /v1/containers/{id} or container logs answer 500 (a recursive redaction walk
 * throws RangeError on it). The FAKE CRI serves a sandbox and a container
 * whose annotations hold such documents (and, beside them, secrets by shape:
 * mysql -p, curl headers, URL userinfo): every route answers 200, shows the
 * depth marker, and no secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MAX_DEPTH } from '../../src/redact.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { LOG_CONTAINER_ID, LOG_DIR, LOG_POD_UID, writePodLogs } from '../fixtures/podlogs.js';

const deepArray = `${'['.repeat(2000)}${']'.repeat(2000)}`;
const deepObject = `${'{"a":'.repeat(2000)}{"env":[{"name":"DB_PASSWORD","value":"FAKEDEEPSECRET"}]}${'}'.repeat(2000)}`;
const SECRETS = ['FAKEDEEPSECRET', 'FAKEURLPW', 'FAKEMYSQL', 'FAKEBEARER', 'FAKEPOSITIONAL', 'FAKEREGHEADER'];
const MARKER = `<redacted: nested deeper than ${MAX_DEPTH}>`;

const root = mkdtempSync(join(tmpdir(), 'nodetruth-redaction-'));
writePodLogs(root);
const now = BigInt(Date.now()) * 1_000_000n;
const POD = 'a1'.repeat(32);
const annotations = {
  'example.com/deep-array': deepArray,
  'example.com/deep-object': deepObject,
  'example.com/upstream': 'https://svc:FAKEURLPW@upstream.example.com/',
  'example.com/registry': JSON.stringify({ headers: { Authorization: ['Basic FAKEREGHEADER'] } }),
};
const fake = new FakeCriServer({
  pods: [{ id: POD, name: 'lab', namespace: 'default', uid: LOG_POD_UID, attempt: 0, state: 'SANDBOX_READY', createdAt: now, annotations }],
  containers: [
    {
      id: LOG_CONTAINER_ID,
      podSandboxId: POD,
      name: 'oom-child',
      attempt: 1,
      image: 'busybox',
      state: 'CONTAINER_RUNNING',
      createdAt: now,
      pid: 4242,
      logPath: `${LOG_DIR}/1.log`,
      annotations,
      env: { DB_PASSWORD: 'FAKEDEEPSECRET' },
      args: ['sh', '-c', 'mysql -uroot -pFAKEMYSQL shop; curl -H "Authorization: Bearer FAKEBEARER" https://a:FAKEURLPW@h/', 'PASSWORD=FAKEPOSITIONAL'],
    },
  ],
  images: [],
});
await fake.start();
const agent = await testApp(['--cri-endpoint', fake.endpoint, '--cri-timeout', '2s', '--host-root', root]);
await agent.app.listen({ port: 0, host: '127.0.0.1' });
const addr = agent.app.server.address() as { port: number };
const base = `http://127.0.0.1:${addr.port}`;
t.teardown(async () => {
  await agent.close();
  await fake.stop();
  rmSync(root, { recursive: true, force: true });
});

for (const path of ['/v1/pods', `/v1/pods/${POD}`, '/v1/containers', `/v1/containers/${LOG_CONTAINER_ID}`]) {
  t.test(`${path} answers 200 with the depth marker, no secret`, async (t) => {
    for (const format of ['json', 'text']) {
      const res = await fetch(`${base}${path}?format=${format}`);
      const body = await res.text();
      t.equal(res.status, 200, `${format}: ${body.slice(0, 300)}`);
      for (const s of SECRETS) t.notOk(body.includes(s), `${format}: ${s} is not shown`);
      if (format === 'json') {
        t.ok(body.includes(MARKER.replace(/"/g, '\\"')) || body.includes(MARKER), 'the marker says where the document was cut');
        t.doesNotThrow(() => JSON.parse(body));
      }
    }
  });
}

t.test('the container status: annotations and verbose info cut at the bound, args redacted', async (t) => {
  const res = await fetch(`${base}/v1/containers/${LOG_CONTAINER_ID}`);
  t.equal(res.status, 200);
  const body = (await res.json()) as { annotations: Record<string, string>; info: { info: { config: { args: string[] }; runtimeSpec: { process: { args: string[] } } } } };
  t.match(body.annotations['example.com/deep-array'], MARKER);
  t.match(body.annotations['example.com/deep-object'], MARKER);
  t.equal(body.annotations['example.com/upstream'], 'https://svc:<redacted>@upstream.example.com/');
  t.same(JSON.parse(body.annotations['example.com/registry']!), { headers: { Authorization: '<redacted>' } });
  const args = body.info.info.runtimeSpec.process.args;
  t.equal(args[3], 'PASSWORD=<redacted>');
  t.match(args[2], /-p<redacted> shop; curl -H "Authorization: Bearer <redacted> https:\/\/a:<redacted>@h\//);
});

t.test('/v1/containers/{id}/logs answers (the container resolves through the redacted records)', async (t) => {
  const res = await fetch(`${base}/v1/containers/${LOG_CONTAINER_ID}/logs?tailLines=2`);
  const body = await res.text();
  t.equal(res.status, 200, body.slice(0, 300));
  t.equal((JSON.parse(body) as { containerId: string }).containerId, LOG_CONTAINER_ID);
});

t.test('the audit line: every query value gets the text rules, not only those under a secret-looking name', async (t) => {
  const before = agent.logs.length;
  const urls = ['/v1/pods?x=Bearer%20abc', `/v1/kernel?pattern=${encodeURIComponent('Bearer FAKEAUDITBEARER')}`, `/v1/pods?next=${encodeURIComponent('https://u:FAKEAUDITPW@h/')}`];
  for (const url of urls) await (await fetch(`${base}${url}`)).text();
  const audits = () => agent.logs.slice(before).filter((l) => l.audit).map((l) => l.audit as { query: Record<string, string> });
  for (let i = 0; i < 500 && audits().length < urls.length; i++) await new Promise((r) => setTimeout(r, 10)); // a hang guard, not a timing assertion
  const [a, b, c] = audits();
  t.equal(a?.query.x, 'Bearer <redacted>', '?x=Bearer%20abc');
  t.equal(b?.query.pattern, 'Bearer <redacted>');
  t.equal(c?.query.next, 'https://u:<redacted>@h/');
  const log = JSON.stringify(agent.logs.slice(before));
  t.notMatch(log, /Bearer abc|FAKEAUDIT/, 'no value of them in any log line');
});
