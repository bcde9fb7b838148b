/**
 * Fleet benchmark: wall time of `nodetruth fleet triage -o json` (fleetMain, in this process)
 * over the FAKE cluster of test/fleet/fake-cluster.ts with N nodes (default 50), at each
 * concurrency given (default 1, 5, 20). Every node's forward is a real child process (the fake
 * kubectl, a Node.js script: ~40 ms of start-up CPU each, where the real kubectl is a Go binary)
 * passing through a loopback relay to one HTTPS agent, which answers each node's /v1/triage
 * after that node's delay with a report of that node's size: delay DELAY_MS..DELAY_MS+JITTER_MS
 * and 5..40 KiB of findings with evidence, the same for a node in every run (by its index).
 * The defaults are of a real agent's triage: ~1.2 s with its 1 s CPU-throttling window on the
 * FAKE 1,000-container node (bench/RESULTS.md, `/v1/triage?window=1s`).
 * The relay counts the forwards open at once; each run also reports the agent's CPU (this
 * process) and the children's (kubectl), from process.cpuUsage and /proc/self/stat cutime+cstime.
 * Run: nice -n 10 npx tsx bench/fleet.ts [nodes] [runs] [concurrency,...] [delayMs] [jitterMs]
 * Prints a human summary on stderr and one JSON report on stdout.
 */
import { EventEmitter } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fleetMain } from '../src/fleet/fleet.js';
import { makeSelfSigned } from '../src/server/tls.js';
import { FakeCluster } from '../test/fleet/fake-cluster.js';
import { median, report, round } from './lib.js';

const nodes = Number(process.argv[2] ?? 50);
const runs = Number(process.argv[3] ?? 3);
const levels = (process.argv[4] ?? '1,5,20').split(',').map(Number);
const DELAY_MS = Number(process.argv[5] ?? 1000);
const JITTER_MS = Number(process.argv[6] ?? 500);
const TOKEN = 'bench-caller-token';
const say = (s: string) => process.stderr.write(`${s}\n`);

const ip = (i: number) => `10.1.${i >> 8}.${(i & 255) + 1}`;
/** a fixed pseudo-random fraction per node, the same in every run */
const frac = (i: number, salt: number) => (((i + 1) * 2654435761 + salt * 40503) >>> 0) / 2 ** 32;

/** Node i's triage report: 5..40 KiB, findings with evidence, as the agent's are shaped. */
function reportOf(i: number): string {
  const target = 5 * 1024 + Math.floor(frac(i, 1) * 35 * 1024);
  const findings: object[] = [];
  let size = 0;
  for (let k = 0; size < target; k++) {
    const f = {
      id: ['oom-kill', 'conntrack-full', 'cpu-throttled', 'disk-pressure', 'pid-pressure'][k % 5],
      severity: k % 7 === 0 ? 'critical' : 'warning',
      title: `finding ${k} on node ${i}`,
      detail: 'x'.repeat(200),
      evidence: Array.from({ length: 4 }, (_, e) => ({ source: 'cgroup', path: `/sys/fs/cgroup/kubepods.slice/pod-${k}-${e}/memory.events`, content: 'oom 1\noom_kill 1\n'.repeat(8) })),
      hint: 'y'.repeat(120),
    };
    size += JSON.stringify(f).length;
    findings.push(f);
  }
  const verdict = findings.some((f) => (f as { severity: string }).severity === 'critical') ? 'critical' : 'warning';
  return JSON.stringify({ verdict, findings, observedAt: new Date().toISOString() });
}

const cluster = await new FakeCluster().start(TOKEN);
const names = Array.from({ length: nodes }, (_, i) => ip(i));
const pems = await makeSelfSigned({ dns: ['localhost'], ips: names });
const caFile = path.join(cluster.dir, 'agents-ca.pem');
writeFileSync(caFile, pems.cert);
const bodies = names.map((_, i) => reportOf(i));
const agents = https.createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
  const i = names.indexOf(String(req.headers.host));
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(bodies[i] ?? '{}');
  }, DELAY_MS + Math.floor(frac(i, 2) * JITTER_MS));
});
agents.listen(0, '127.0.0.1');
await new Promise((r) => agents.once('listening', r));
const agentPort = (agents.address() as AddressInfo).port;
for (let i = 0; i < nodes; i++) {
  const pod = { name: `nodetruth-b${i}`, hostIP: ip(i) };
  cluster.nodes.push({ name: `node-${String(i).padStart(3, '0')}`, pod });
  cluster.agents.set(pod.name, { port: agentPort });
}

/** CPU of this process's reaped children (the kubectl processes), ms: /proc/self/stat cutime + cstime. */
function childCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
}

const results: { concurrency: number; wallMs: number[]; medianMs: number; maxOpen: number; selfCpuMs: number; kubectlCpuMs: number; rows: number; failed: number }[] = [];
for (const c of levels) {
  const wall: number[] = [];
  let maxOpen = 0;
  let rows = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const child0 = childCpuMs();
  const n = c === 1 ? Math.min(runs, 1) : runs; // concurrency 1 is ~nodes x delay: one run
  for (let r = 0; r < n; r++) {
    cluster.maxOpen = 0;
    let out = '';
    const t0 = performance.now();
    const code = await fleetMain(['triage', '-o', 'json', '--concurrency', String(c), '--timeout', '60s', '--agent-ca', caFile], { out: (s) => void (out += s), err: () => {} }, new EventEmitter());
    wall.push(round(performance.now() - t0, 0));
    const parsed = JSON.parse(out) as { error?: string }[];
    rows = parsed.length;
    failed = parsed.filter((x) => x.error !== undefined).length;
    maxOpen = Math.max(maxOpen, cluster.maxOpen);
    if (code !== 2) say(`concurrency ${c}: exit ${code} (expected 2: every node has a critical or warning)`);
  }
  const cpu = process.cpuUsage(cpu0);
  const res = { concurrency: c, wallMs: wall, medianMs: median(wall), maxOpen, selfCpuMs: round((cpu.user + cpu.system) / 1000 / n, 0), kubectlCpuMs: round((childCpuMs() - child0) / n, 0), rows, failed };
  results.push(res);
  say(`concurrency ${String(c).padStart(3)}: wall ${wall.map((w) => `${(w / 1000).toFixed(1)} s`).join(', ')} (median ${(res.medianMs / 1000).toFixed(1)} s); at most ${maxOpen} forwards open; CPU per run: fleet ${res.selfCpuMs} ms, kubectl children ${res.kubectlCpuMs} ms; ${rows} rows, ${failed} failed`);
}

agents.closeAllConnections();
agents.close();
await cluster.stop();
report('fleet', `nice -n 10 npx tsx bench/fleet.ts ${nodes} ${runs} ${levels.join(',')} ${DELAY_MS} ${JITTER_MS}`, {
  nodes,
  agentDelayMs: [DELAY_MS, DELAY_MS + JITTER_MS],
  answerBytes: [Math.min(...bodies.map((b) => b.length)), Math.max(...bodies.map((b) => b.length))],
  results,
});
