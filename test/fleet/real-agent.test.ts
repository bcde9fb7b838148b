/**
 * `fleet triage` through the fake cluster's port-forward to a REAL agent process serving
 * --auth kubernetes against the FAKE API server: the agent itself reviews the caller's
 * token and asks whether the caller may `get nodes/nodetruth` on its node. A caller it
 * refuses gets a row saying 403; one it admits gets the node's verdict.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import t from 'tap';
import { fleetMain } from '../../src/fleet/fleet.js';
import { makeSelfSigned } from '../../src/server/tls.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { FakeCluster } from './fake-cluster.js';

const HOST_IP = '10.0.9.1';
const api = await new FakeKubeApiServer().start();
api.tokens.set('token-alice', { username: 'alice', groups: ['system:authenticated', 'oncall'] });
api.tokens.set('token-mallory', { username: 'mallory', groups: ['system:authenticated'] });
api.authorize = (r) => ({ allowed: r.user === 'alice' && r.resourceAttributes.resource === 'nodes' && r.resourceAttributes.subresource === 'nodetruth' && r.resourceAttributes.name === 'node-real' });
const dir = mkdtempSync(path.join(tmpdir(), 'fleet-real-'));
const agent = await startAgentProcess(['--auth', 'kubernetes', '--kubeconfig', api.writeKubeconfig(dir), '--node-name', 'node-real', '--host-root', dir]);
const cluster = await new FakeCluster().start('token-mallory');
const pems = await makeSelfSigned({ dns: ['node-real'], ips: [HOST_IP] });
cluster.nodes.push({ name: 'node-real', pod: { name: 'nodetruth-real1', hostIP: HOST_IP } });
// the agent serves plain HTTP on loopback here; the fake forward terminates TLS in front of it
cluster.agents.set('nodetruth-real1', { port: Number(new URL(agent.url).port), terminate: pems });
t.teardown(async () => {
  await cluster.stop();
  await agent.stop();
  await api.stop();
});

async function run(token: string) {
  process.env.FAKE_FLEET_TOKEN = token;
  let out = '';
  const code = await fleetMain(['triage', '-o', 'json', '--timeout', '60s', '--insecure-skip-agent-verify'], { out: (s) => void (out += s), err: () => {} }, new EventEmitter());
  return { code, rows: JSON.parse(out) as { node: string; verdict: string | null; error?: string; findings?: unknown[] }[] };
}

t.test('a caller the agent refuses: 403 in its row, exit 3', async (t) => {
  const r = await run('token-mallory');
  t.equal(r.code, 3);
  t.equal(r.rows.length, 1);
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
