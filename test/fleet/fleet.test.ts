/**
 * `nodetruth fleet` against a FAKE cluster (test/fleet/fake-cluster.ts: the API server's
 * node and pod lists, a kubectl whose port-forwards pass through a relay that counts
 * sessions) and agents answering over TLS with the certificate the run checks: 50 nodes,
 * one critical, many with the same warning, one answering 403, one that never answers,
 * one without an agent, one NotReady and tainted, one whose name and finding carry
 * terminal escapes.
 */
import { EventEmitter } from 'node:events';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { fleetMain } from '../../src/fleet/fleet.js';
import { makeSelfSigned } from '../../src/server/tls.js';
import { FakeCluster } from './fake-cluster.js';
import { alive } from '../helpers/pids.js';

const TOKEN = 'caller-token-alice';
const HOSTILE = 'node-\x1b]0;pwned\x07\x1b[2K';
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

const ip = (i: number) => `10.0.0.${i + 1}`;
const name = (i: number) => (i === 49 ? HOSTILE : `node-${String(i).padStart(2, '0')}`);
const finding = (id: string, severity: string, title: string) => ({ id, severity, title, detail: '', evidence: [] });

/** What node i's agent answers to GET /v1/triage. */
function triageOf(i: number): { status: number; body: object } {
  if (i === 3) return { status: 200, body: { verdict: 'critical', findings: [finding('oom-kill', 'critical', '3 containers OOM-killed in 15m'), finding('conntrack-full', 'warning', 'conntrack table 95% full')] } };
  if (i === 7) return { status: 403, body: { type: 'about:blank', title: 'Forbidden', status: 403, code: 'forbidden', detail: 'alice may not get nodes/nodetruth' } };
  if (i === 49) return { status: 200, body: { verdict: 'warning', findings: [finding('disk-\x1b[8m', 'warning', 'hidden\u009b2J\u202eevil')] } };
  if (i % 4 === 1) return { status: 200, body: { verdict: 'warning', findings: [finding('conntrack-full', 'warning', 'conntrack table 95% full')] } };
  return { status: 200, body: { verdict: 'ok', findings: [] } };
}

const cluster = await new FakeCluster().start(TOKEN);
const names = Array.from({ length: 50 }, (_, i) => ip(i));
const pems = await makeSelfSigned({ dns: ['localhost'], ips: names });
const caFile = path.join(cluster.dir, 'agents-ca.pem');
writeFileSync(caFile, pems.cert);
const seenAuth: string[] = [];
const agents = https.createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
  seenAuth.push(String(req.headers.authorization));
  const i = names.indexOf(String(req.headers.host));
  if (req.url === '/v1/bundle' && i !== 7) {
    res.writeHead(200, { 'content-type': 'application/gzip' });
    return void res.end(`bundle of ${name(i)}`);
  }
  const a = triageOf(i);
  res.writeHead(req.headers.authorization === `Bearer ${TOKEN}` ? a.status : 401, { 'content-type': a.status === 200 ? 'application/json' : 'application/problem+json' });
  res.end(JSON.stringify(a.body));
});
agents.listen(0, '127.0.0.1');
await new Promise((r) => agents.once('listening', r));
const agentPort = (agents.address() as AddressInfo).port;

for (let i = 0; i < 50; i++) {
  const pod = i === 13 ? null : { name: `nodetruth-${String(i).padStart(2, '0')}abc`, hostIP: ip(i) };
  cluster.nodes.push({ name: name(i), pod, ...(i === 18 ? { ready: false, taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }] } : {}) });
  if (pod) cluster.agents.set(pod.name, i === 11 ? 'hang' : { port: agentPort });
}

t.teardown(async () => {
  agents.closeAllConnections();
  agents.close();
  await cluster.stop();
});

async function runFleet(args: string[], signals = new EventEmitter()) {
  let out = '';
  let err = '';
  const code = await fleetMain(args, { out: (s) => void (out += s), err: (s) => void (err += s) }, signals);
  return { code, out, err };
}

/**
 * The most port-forward processes alive at once, from the fake kubectl's own log: each
 * appends its start and the signal that ends it, in the order they happened.
 */
function mostAtOnce(calls: { pid: number; argv?: string[]; signal?: string }[]): number {
  const open = new Set<number>();
  let most = 0;
  for (const c of calls) {
    if (c.argv?.includes('port-forward')) open.add(c.pid);
    if (c.signal) open.delete(c.pid);
    most = Math.max(most, open.size);
  }
  return most;
}


t.test('50 nodes: one row each, worst first, bounded fan-out, a hung node cut, 403 and no agent reported', async (t) => {
  const logged = cluster.calls().length;
  const r = await runFleet(['triage', '-o', 'json', '--concurrency', '5', '--timeout', '5s', '--agent-ca', caFile]);
  t.equal(r.code, 2, 'a critical node: exit 2, whatever else failed');
  const rows = JSON.parse(r.out) as { node: string; pod: string | null; verdict: string | null; error?: string; findings?: { id: string }[]; notes: string[]; observedAt: string }[];
  t.equal(rows.length, 50, 'every node has a row');
  t.equal(rows[0]!.node, 'node-03', 'worst first');
  const row = (n: string) => rows.find((x) => x.node === n)!;
  t.match(row('node-11').error, /^timed out after 5s$/, 'the hung node is cut at its deadline');
  t.match(row('node-07').error, /agent answered 403: forbidden: Forbidden: alice may not/, "the agent's 403 for this caller");
  t.match(row('node-13').error, /no agent pod on this node/, 'no agent');
  t.equal(row('node-18').verdict, 'ok', 'a NotReady node is still asked');
  t.match(row('node-18').notes, ['NotReady (Ready=Unknown)', 'taint node.kubernetes.io/unreachable:NoExecute']);
  t.same(rows.filter((x) => x.error !== undefined).map((x) => x.node).sort(), ['node-07', 'node-11', 'node-13'], 'the others answered');
  const most = mostAtOnce(cluster.calls().slice(logged));
  t.ok(most <= 5, `never more than 5 port-forward sessions at once (saw ${most})`);
  t.ok(most >= 2, 'and more than one at a time');
  t.ok(seenAuth.length >= 47 && seenAuth.every((a) => a === `Bearer ${TOKEN}`), "the caller's token reached every agent");
  t.match(r.err, /50\/50 nodes done, 3 failed/, 'progress on stderr');
  t.notOk(RAW_CONTROL.test(r.out), 'no raw control character in the JSON');
  t.ok(rows.some((x) => x.node === HOSTILE), 'and it is still the same JSON');
  const forwards = cluster.calls().slice(logged).filter((c) => c.argv?.includes('port-forward'));
  t.equal(forwards.length, 49, 'one port-forward per node with an agent');
  t.notOk(forwards.some((c) => alive(c.pid)), 'every port-forward ended');
});

t.test('text roll-up: identical findings collapsed, hostile text escaped', async (t) => {
  cluster.agents.set('nodetruth-11abc', { port: agentPort });
  t.teardown(() => void cluster.agents.set('nodetruth-11abc', 'hang'));
  const r = await runFleet(['triage', '--concurrency', '10', '--timeout', '60s', '--agent-ca', caFile]);
  t.equal(r.code, 2);
  const lines = r.out.split('\n');
  t.match(lines[1], /^node-03\s+critical\s+1\s+1\s+0\s+oom-kill: 3 containers OOM-killed/);
  const blocks = lines.filter((l) => l.startsWith('---------------- conntrack-full'));
  t.equal(blocks.length, 1, 'one block for the identical finding');
  t.match(blocks[0], /on 12 nodes: node-01,node-03,node-05,node-09,node-17,/);
  t.match(r.out, /not answered on 1 node: node-07\n  agent answered 403/);
  t.match(r.out, /not answered on 1 node: node-13\n  no agent pod/);
  t.notOk(RAW_CONTROL.test(r.out.replace(/\n/g, '')), 'no control character but line breaks');
  t.match(r.out, 'node-\\x1b]0;pwned\\x07\\x1b[2K', 'the hostile name, inert');
  t.match(r.out, 'hidden\\u009b2J\\u202eevil');
});

t.test('exit codes follow the worst verdict', async (t) => {
  const base = ['triage', '--timeout', '5s', '--agent-ca', caFile, '--nodes'];
  t.equal((await runFleet([...base, 'node-00,node-02'])).code, 0, 'all ok');
  t.equal((await runFleet([...base, 'node-00,node-01'])).code, 1, 'a warning');
  t.equal((await runFleet([...base, 'node-00,node-07'])).code, 3, 'a node not answered');
  const r = await runFleet([...base, 'node-00,nope']);
  t.equal(r.code, 3);
  t.match(r.out, /nope\s+error\s+-\s+-\s+-\s+no such node/);
});

t.test('a certificate the CA did not sign: the token is not sent', async (t) => {
  const other = await makeSelfSigned({ dns: ['localhost'], ips: [ip(0)] });
  const otherCa = path.join(cluster.dir, 'other-ca.pem');
  writeFileSync(otherCa, other.cert);
  const before = seenAuth.length;
  const r = await runFleet(['triage', '-o', 'json', '--agent-ca', otherCa, '--nodes', 'node-00']);
  t.equal(r.code, 3);
  t.match(JSON.parse(r.out)[0].error, /self.signed|certificate/i);
  t.equal(seenAuth.length, before, 'no request reached the agent');
});

t.test('Ctrl-C: no new nodes, every port-forward ended by PID, what was gathered printed', async (t) => {
  for (const p of ['nodetruth-21abc', 'nodetruth-22abc', 'nodetruth-23abc', 'nodetruth-24abc']) cluster.agents.set(p, 'hang');
  t.teardown(() => {
    for (const p of ['nodetruth-21abc', 'nodetruth-22abc', 'nodetruth-23abc', 'nodetruth-24abc']) cluster.agents.set(p, { port: agentPort });
  });
  const logged = cluster.calls().length;
  const signals = new EventEmitter();
  const running = runFleet(['triage', '-o', 'json', '--concurrency', '3', '--timeout', '10m', '--agent-ca', caFile, '--nodes', 'node-20,node-21,node-22,node-23,node-24'], signals);
  // node-20 answers; then three hanging sessions are open
  for (let i = 0; i < 400; i++) {
    if (cluster.calls().slice(logged).filter((c) => c.forwarding).length >= 4 && cluster.open >= 3) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const forwards = cluster.calls().slice(logged).filter((c) => c.argv?.includes('port-forward'));
  t.equal(forwards.length, 4, 'node-20 and three hanging nodes were started');
  const hanging = forwards.filter((c) => !c.argv!.includes('pod/nodetruth-20abc'));
  t.equal(hanging.length, 3);
  t.ok(hanging.every((c) => alive(c.pid)), 'the hanging forwards are running');
  signals.emit('SIGINT', 'SIGINT');
  const r = await running;
  t.equal(r.code, 130);
  const rows = JSON.parse(r.out) as { node: string; error?: string; verdict: string | null }[];
  t.equal(rows.length, 5, 'every node in the result');
  t.equal(rows.find((x) => x.node === 'node-20')!.verdict, 'ok', 'what was gathered');
  t.match(rows.find((x) => x.node === 'node-24')!.error, /not asked: stopped by SIGINT/);
  t.equal(rows.filter((x) => /stopped by SIGINT/.test(x.error ?? '')).length, 4);
  t.notOk(forwards.some((c) => alive(c.pid)), 'no port-forward left');
});

t.test('fleet get: JSON lines per node; PATH checked before anything runs', async (t) => {
  const r = await runFleet(['get', '/v1/triage', '--agent-ca', caFile, '--nodes', 'node-00,node-07']);
  t.equal(r.code, 3);
  const lines = r.out.trim().split('\n').map((l) => JSON.parse(l));
  t.same(lines.map((l) => l.node), ['node-00', 'node-07']);
  t.same(lines[0].body, { verdict: 'ok', findings: [] });
  for (const bad of ['/v1/../metrics', 'https://evil.example/v1/oom', '//evil/v1/oom', '/v1/secrets', '/v1/oom?x=\x1b']) {
    const calls = cluster.calls().length;
    const u = await runFleet(['get', bad, '--agent-ca', caFile]);
    t.equal(u.code, 2, `refused: ${JSON.stringify(bad)}`);
    t.equal(cluster.calls().length, calls, 'no kubectl ran');
  }
  const a = await runFleet(['triage', '--attach-image', 'x:1', '--agent-ca', caFile]);
  t.equal(a.code, 2);
  t.match(a.err, /--attach-namespace and --attach-image go with --attach/);
  const ns = await runFleet(['triage', '--attach', '--attach-namespace=Bad_NS', '--agent-ca', caFile]);
  t.equal(ns.code, 2);
  t.match(ns.err, /--attach-namespace: expected a namespace name/);
  const v = await runFleet(['triage']);
  t.match(v.err, /pass --agent-ca/);
});

t.test('fleet capture: one bundle per node, index.json says what each holds or why not', async (t) => {
  const dir = path.join(cluster.dir, 'capture');
  const r = await runFleet(['capture', '-o', dir, '--timeout', '5s', '--agent-ca', caFile, '--nodes', 'node-00,node-07,node-11,node-13']);
  t.equal(r.code, 3, 'some nodes failed');
  const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')) as { node: string; file?: string; bytes?: number; error?: string }[];
  t.same(index.map((x) => x.node), ['node-00', 'node-07', 'node-11', 'node-13']);
  t.match(index[0], { node: 'node-00', pod: 'nodetruth-00abc', file: 'node-00.tar.gz', bytes: 17 });
  t.equal(readFileSync(path.join(dir, 'node-00.tar.gz'), 'utf8'), 'bundle of node-00');
  t.match(index[1]!.error, /agent answered 403/);
  t.match(index[2]!.error, /timed out after 5s/);
  t.match(index[3]!.error, /no agent pod/);
  t.same(readdirSync(dir).sort(), ['index.json', 'node-00.tar.gz'], 'no partial bundle left');
  t.notOk(existsSync(path.join(dir, 'node-11.tar.gz')));
});

t.test('the overall deadline: nodes not started are rows saying so', async (t) => {
  for (const p of ['nodetruth-30abc', 'nodetruth-31abc']) cluster.agents.set(p, 'hang');
  t.teardown(() => {
    for (const p of ['nodetruth-30abc', 'nodetruth-31abc']) cluster.agents.set(p, { port: agentPort });
  });
  const r = await runFleet(['triage', '-o', 'json', '--concurrency', '1', '--timeout', '10m', '--deadline', '3s', '--agent-ca', caFile, '--nodes', 'node-30,node-31,node-32']);
  t.equal(r.code, 3);
  const rows = JSON.parse(r.out) as { node: string; error?: string }[];
  t.same(rows.map((x) => [x.node, x.error]), [
    ['node-30', 'overall deadline 3s passed'],
    ['node-31', 'not asked: overall deadline 3s passed'],
    ['node-32', 'not asked: overall deadline 3s passed'],
  ]);
});

t.test('the real command: SIGINT to `nodetruth fleet` ends its port-forwards and prints the rows', async (t) => {
  const { spawn } = await import('node:child_process');
  const { REPO } = await import('../helpers/agent-process.js');
  for (const p of ['nodetruth-40abc', 'nodetruth-41abc']) cluster.agents.set(p, 'hang');
  t.teardown(() => {
    for (const p of ['nodetruth-40abc', 'nodetruth-41abc']) cluster.agents.set(p, { port: agentPort });
  });
  const logged = cluster.calls().length;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli.ts'), 'fleet', 'triage', '-o', 'json', '--agent-ca', caFile, '--nodes', 'node-40,node-41'], {
    cwd: REPO,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (let i = 0; i < 800 && cluster.calls().slice(logged).filter((c) => c.forwarding).length < 2; i++) await new Promise((r) => setTimeout(r, 25));
  const forwards = cluster.calls().slice(logged).filter((c) => c.argv?.includes('port-forward'));
  t.equal(forwards.length, 2, 'both nodes started');
  t.ok(forwards.every((c) => alive(c.pid)), 'their forwards run');
  child.kill('SIGINT'); // to the command alone, as SIGINT from a script would: it must end its children itself
  t.equal(await exited, 130);
  t.same((JSON.parse(out) as { error: string }[]).map((x) => x.error), ['stopped by SIGINT', 'stopped by SIGINT']);
  t.notOk(forwards.some((c) => alive(c.pid)), 'no port-forward left');
});

t.test("the forward asks the agent's loopback port: 7071 by default, as the DaemonSet listens", async (t) => {
  const logged = cluster.calls().length;
  const ok = await runFleet(['triage', '-o', 'json', '--timeout', '5s', '--agent-ca', caFile, '--nodes', 'node-00']);
  t.equal(ok.code, 0);
  const fwd = cluster.calls().slice(logged).find((c) => c.argv?.includes('port-forward'));
  t.ok(fwd?.argv?.includes(':7071'), `port-forward pod/… :7071 (${fwd?.argv?.join(' ')})`);
  // the agent's node address port (7070 in the DaemonSet) is not on the node's loopback: nothing answers there
  const wrong = await runFleet(['triage', '-o', 'json', '--timeout', '5s', '--agent-ca', caFile, '--nodes', 'node-00', '--agent-port', '7070']);
  t.equal(wrong.code, 3, 'not answered');
  t.match((JSON.parse(wrong.out) as { error: string }[])[0]!.error, /socket hang up|ECONNRESET|disconnected|TLS/i);
});

t.test("the forward names the agent pods' namespace, not the context's", async (t) => {
  // kubectl port-forward looks the pod up in the context's namespace unless told: on the real
  // API server (v1.36.3) a fleet caller got "pods … is forbidden … in the namespace \"default\""
  const logged = cluster.calls().length;
  const r = await runFleet(['triage', '-o', 'json', '--timeout', '5s', '--agent-ca', caFile, '--nodes', 'node-00']);
  const fwd = cluster.calls().slice(logged).find((c) => c.argv?.includes('port-forward'));
  t.ok(fwd?.argv?.includes('--namespace=nodetruth'), `port-forward --namespace=nodetruth (${fwd?.argv?.join(' ')})`);
  const row = (JSON.parse(r.out) as { verdict: string | null; error?: string }[])[0]!;
  t.equal(row.error, undefined, `answered (${row.error ?? ''})`);
  t.equal(row.verdict, 'ok');
});
