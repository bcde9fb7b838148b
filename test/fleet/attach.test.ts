/**
 * `nodetruth fleet --attach` against the FAKE cluster (test/fleet/fake-cluster.ts): nodes with no
 * agent pod are asked through a debug pod each, made and ended by attach's own steps
 * (src/launcher), within --concurrency and --timeout; every debug pod is deleted, whether the
 * node answered, was cut at its deadline, or the run was stopped with Ctrl-C.
 */
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { fleetMain } from '../../src/fleet/fleet.js';
import { makeSelfSigned } from '../../src/server/tls.js';
import { FakeCluster } from './fake-cluster.js';
import { alive } from '../helpers/pids.js';

const finding = (id: string, severity: string, title: string) => ({ id, severity, title, detail: '', evidence: [] });
const cluster = await new FakeCluster().start('caller-token');
// node-00 has its DaemonSet agent (TLS; its certificate is not checked here)
const pems = await makeSelfSigned({ dns: ['localhost'], ips: ['10.0.0.1'] });
const agents = https.createServer({ key: pems.key, cert: pems.cert }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ verdict: 'ok', findings: [] }));
});
agents.listen(0, '127.0.0.1');
await once(agents, 'listening');
cluster.nodes.push({ name: 'node-00', pod: { name: 'nodetruth-00abc', hostIP: '10.0.0.1' } });
cluster.agents.set('nodetruth-00abc', { port: (agents.address() as AddressInfo).port });
t.teardown(async () => {
  agents.closeAllConnections();
  agents.close();
  await cluster.stop();
});

async function runFleet(args: string[], signals = new EventEmitter()) {
  let out = '';
  let err = '';
  const code = await fleetMain([...args, '--insecure-skip-agent-verify'], { out: (s) => void (out += s), err: (s) => void (err += s) }, signals);
  return { code, out, err };
}

t.test('--attach: each node without an agent through a debug pod of its own, bounded, every pod deleted', async (t) => {
  const extra = ['node-13', ...Array.from({ length: 6 }, (_, i) => `node-a${i}`)];
  for (const n of extra) cluster.nodes.push({ name: n, pod: null });
  // a debug pod's agent: plain HTTP on its loopback, answering only a session's own token
  const tokens = () => new Set(cluster.calls().filter((c) => c.debug).map((c) => c.token));
  const debugAgent = http.createServer((req, res) => {
    const ok = tokens().has(String(req.headers['x-nodetruth-session']));
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { verdict: 'warning', findings: [finding('seen-attached', 'warning', 'through a debug pod')] } : { title: 'no session token' }));
  });
  debugAgent.listen(0, '127.0.0.1');
  await once(debugAgent, 'listening');
  cluster.debugAgent = { port: (debugAgent.address() as AddressInfo).port };
  t.teardown(() => {
    cluster.debugAgent = null;
    delete process.env.FAKE_FLEET_HANG_WAIT;
    debugAgent.close();
  });

  let logged = cluster.calls().length;
  const r = await runFleet(['triage', '-o', 'json', '--attach', '--attach-namespace', 'nodetruth-attach', '--concurrency', '2', '--timeout', '30s', '--nodes', ['node-00', ...extra].join(',')]);
  t.equal(r.code, 1, 'every node answered, the worst a warning');
  const rows = JSON.parse(r.out) as { node: string; verdict: string | null; error?: string; findings?: { id: string }[]; notes: string[] }[];
  t.equal(rows.length, 8);
  for (const n of extra) {
    const row = rows.find((x) => x.node === n)!;
    t.same([row.verdict, row.findings?.map((f) => f.id), row.notes], ['warning', ['seen-attached'], ['no agent pod: asked through a debug pod (--attach)']], `${n} through its debug pod`);
  }
  t.equal(rows.find((x) => x.node === 'node-00')!.verdict, 'ok', 'a node with its agent is asked as before');
  let calls = cluster.calls().slice(logged);
  const debugs = calls.filter((c) => c.debug);
  t.same(debugs.map((c) => c.node).sort(), [...extra].sort(), 'one debug pod per node without an agent');
  t.ok(debugs.every((c) => c.namespace === 'nodetruth-attach'), 'in --attach-namespace');
  t.same(calls.filter((c) => c.deleted).map((c) => c.deleted).sort(), debugs.map((c) => c.debug).sort(), 'every debug pod deleted');
  const patched = calls.filter((c) => c.argv?.[0] === 'patch' || c.argv?.includes('patch'));
  t.equal(patched.length, 7, 'each given its deadline');
  t.ok(patched.every((c) => c.argv!.some((a) => /"activeDeadlineSeconds":90\b/.test(a))), 'the node timeout plus a minute');
  // debug pods alive at once, from create to delete, in the order the fake kubectl logged them
  let open = 0;
  let most = 0;
  for (const c of calls) {
    if (c.debug) most = Math.max(most, ++open);
    if (c.deleted) open--;
  }
  t.ok(most <= 2 && most >= 1, `never more than --concurrency debug pods at once (saw ${most})`);
  t.notOk(calls.some((c) => alive(c.pid)), 'no kubectl left');

  // a debug pod that never gets ready: cut at the node's deadline, deleted; the deadline leaves
  // the other node's kubectl runs (each a process start) time on a machine loaded by builds
  process.env.FAKE_FLEET_HANG_WAIT = 'node-a0';
  logged = cluster.calls().length;
  const cut = await runFleet(['triage', '-o', 'json', '--attach', '--timeout', '20s', '--nodes', 'node-a0,node-a1']);
  t.equal(cut.code, 3);
  const cutRows = JSON.parse(cut.out) as { node: string; error?: string; verdict: string | null }[];
  t.match(cutRows.find((x) => x.node === 'node-a0')!.error, /^timed out after 20s$/, 'cut at its deadline');
  t.equal(cutRows.find((x) => x.node === 'node-a1')!.verdict, 'warning', 'the other finishes');
  calls = cluster.calls().slice(logged);
  t.same(calls.filter((c) => c.deleted).map((c) => c.deleted).sort(), calls.filter((c) => c.debug).map((c) => c.debug).sort(), 'both debug pods deleted');
  t.notOk(calls.some((c) => alive(c.pid)), 'the hanging kubectl wait ended');

  // Ctrl-C while two debug pods wait: no new node, both deleted, the rows printed
  process.env.FAKE_FLEET_HANG_WAIT = 'node-a2,node-a3';
  logged = cluster.calls().length;
  const signals = new EventEmitter();
  const running = runFleet(['triage', '-o', 'json', '--attach', '--concurrency', '2', '--timeout', '10m', '--nodes', 'node-a2,node-a3,node-a4'], signals);
  for (let i = 0; i < 400 && cluster.calls().slice(logged).filter((c) => c.argv?.includes('wait')).length < 2; i++) await new Promise((r) => setTimeout(r, 25));
  signals.emit('SIGINT', 'SIGINT');
  const stopped = await running;
  t.equal(stopped.code, 130);
  const stoppedRows = JSON.parse(stopped.out) as { node: string; error?: string }[];
  t.same(stoppedRows.map((x) => [x.node, x.error]).sort(), [
    ['node-a2', 'stopped by SIGINT'],
    ['node-a3', 'stopped by SIGINT'],
    ['node-a4', 'not asked: stopped by SIGINT'],
  ]);
  calls = cluster.calls().slice(logged);
  t.equal(calls.filter((c) => c.debug).length, 2, 'no debug pod for the node not started');
  t.same(calls.filter((c) => c.deleted).map((c) => c.deleted).sort(), calls.filter((c) => c.debug).map((c) => c.debug).sort(), 'both debug pods deleted');
  t.notOk(calls.some((c) => alive(c.pid)), 'no kubectl left');
});
