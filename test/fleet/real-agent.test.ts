/**
 * `fleet triage` through the fake cluster's port-forward to a REAL agent process started as the
 * DaemonSet starts it: two addresses (here 127.0.0.1 for the node's and 127.0.0.2 for the node's
 * loopback port), --auth kubernetes and TLS on both, against the FAKE API server. The forward
 * passes the caller's TLS through to the second address; the run checks the agent's own
 * self-signed certificate (--agent-ca, names the pod's host IP through NODE_IP). The agent
 * itself reviews the caller's token and asks whether the caller may `get nodes/nodetruth` on its
 * node: a caller it refuses gets a row saying 403; one it admits gets the node's verdict.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import t from 'tap';
import { fleetMain } from '../../src/fleet/fleet.js';
import { REPO } from '../helpers/agent-process.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { FakeCluster } from './fake-cluster.js';

const HOST_IP = '10.0.9.1';
const api = await new FakeKubeApiServer().start();
api.tokens.set('token-alice', { username: 'alice', groups: ['system:authenticated', 'oncall'] });
api.tokens.set('token-mallory', { username: 'mallory', groups: ['system:authenticated'] });
api.authorize = (r) => ({ allowed: r.user === 'alice' && r.resourceAttributes.resource === 'nodes' && r.resourceAttributes.subresource === 'nodetruth' && r.resourceAttributes.name === 'node-real' });
const dir = mkdtempSync(path.join(tmpdir(), 'fleet-real-'));
// port 0 on both: the kernel's choice, read back from the agent's own log (a port chosen
// beforehand could be taken on 127.0.0.2 by another test's server before the agent binds it)
const agent = spawn(
  process.execPath,
  ['--import', 'tsx', path.join(REPO, 'src/cli.ts'), 'serve', '--listen=127.0.0.1:0,127.0.0.2:0', '--auth=kubernetes', '--tls=on', '--kubeconfig', api.writeKubeconfig(dir), '--node-name', 'node-real', '--host-root', dir],
  { cwd: REPO, env: { ...process.env, NODE_IP: HOST_IP }, stdio: ['ignore', 'pipe', 'pipe'] },
);
let agentLog = '';
agent.stdout.setEncoding('utf8').on('data', (d: string) => (agentLog += d));
agent.stderr.setEncoding('utf8').on('data', (d: string) => (agentLog += d));
for (let i = 0; i < 1200 && !agentLog.includes('nodetruth serving'); i++) {
  if (agent.exitCode !== null) throw new Error(`agent exited: ${agentLog}`);
  await new Promise((r) => setTimeout(r, 50));
}
if (!agentLog.includes('nodetruth serving')) throw new Error(`agent did not start: ${agentLog.slice(-2000)}`);
const serving = agentLog
  .split('\n')
  .filter((l) => l.includes('nodetruth serving'))
  .map((l) => JSON.parse(l) as { listen: string[] })[0]!;
const loopbackPort = Number(serving.listen.find((a) => a.startsWith('127.0.0.2:'))!.split(':')[1]);
// the agent's own certificate, as an operator takes it (its log names the pin; here, from the socket)
const caFile = path.join(dir, 'agent.pem');
{
  const s = tls.connect({ host: '127.0.0.2', port: loopbackPort, rejectUnauthorized: false });
  await once(s, 'secureConnect');
  const der = s.getPeerCertificate().raw;
  s.destroy();
  // PEM from the library: a hand-wrapped one gains a blank line when the base64 is a multiple
  // of 64 characters long, and OpenSSL then loads no CA (DEPTH_ZERO_SELF_SIGNED_CERT)
  writeFileSync(caFile, new X509Certificate(der).toString());
}
const cluster = await new FakeCluster().start('token-mallory');
cluster.nodes.push({ name: 'node-real', pod: { name: 'nodetruth-real1', hostIP: HOST_IP } });
// the forward reaches the agent's loopback address (inPod: fleet's default port), TLS passed through
cluster.agents.set('nodetruth-real1', { host: '127.0.0.2', port: loopbackPort });
t.teardown(async () => {
  await cluster.stop();
  if (agent.exitCode === null) {
    agent.kill('SIGTERM');
    await once(agent, 'exit');
  }
  await api.stop();
});

async function run(token: string) {
  process.env.FAKE_FLEET_TOKEN = token;
  let out = '';
  const code = await fleetMain(['triage', '-o', 'json', '--timeout', '60s', '--agent-ca', caFile], { out: (s) => void (out += s), err: () => {} }, new EventEmitter());
  return { code, rows: JSON.parse(out) as { node: string; verdict: string | null; error?: string; findings?: unknown[] }[] };
}

t.test('a caller the agent refuses: 403 in its row, exit 3', async (t) => {
  const r = await run('token-mallory');
  t.equal(r.rows.length, 1);
  t.equal(r.code, 3);
  t.match(r.rows[0]!.error, /^agent answered 403: /);
  const sar = api.requests.filter((q) => q.url.includes('subjectaccessreviews')).map((q) => (q.body as { spec: { user: string } }).spec.user);
  t.ok(sar.includes('mallory'), 'the agent asked the API server about this caller');
});

t.test('a caller it admits: the node verdict', async (t) => {
  const r = await run('token-alice');
  t.equal(r.rows.length, 1);
  t.notOk(r.rows[0]!.error, r.rows[0]!.error ?? 'answered');
  t.match(r.rows[0]!.verdict, /^(ok|warning|critical)$/);
  t.equal(r.code, { ok: 0, warning: 1, critical: 2 }[r.rows[0]!.verdict!]);
});
