/**
 * The event loop's longest stretch per route on a FAKE hostile node: every route
 * asked once, one at a time, in this process, with a 5 ms monitorEventLoopDelay reset around
 * each request. The fuzz and hostile-node tests report multi-second maxima, but their thread
 * also scans every answer for secrets and runs fake servers, and they run many requests at
 * once on a shared machine; this isolates the agent's own work per request.
 *
 *   npx tsx bench/eventloop-hostile.ts
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { testApp } from '../test/helpers/app.js';
import { REPO } from '../test/helpers/agent-process.js';

const host = await makeFakeScaleHost({ pods: 6, perPod: 2, journal: true, logLines: 10, hostile: 1 });
const o = host.options;
const arg = JSON.stringify({ pods: o.pods, perPod: o.perPod, seed: o.seed, nowNs: o.nowNs.toString(), hostile: o.hostile });
const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'test/helpers/fake-cri-process.ts'), arg], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
const endpoint: string = await new Promise((res) => child.stdout!.on('data', (d: Buffer) => { const m = /"endpoint":"([^"]+)"/.exec(d.toString()); if (m) res(m[1]!); }));
const agent = await testApp(['--host-root', host.root, '--cri-endpoint', endpoint, '--kmsg-path', host.kmsg, '--node-name', 'fake-node', '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--cri-timeout', '20s', '--request-timeout', '150s']);
const h = host.hostile!;
const ids = host.node.containers.map((c) => c.id);
const urls = ['/metrics', '/v1/cgroups', '/v1/containers', '/v1/pods', '/v1/node', '/v1/oom', '/v1/kernel', '/v1/kernel?tailLines=100000', '/v1/logs?query=kubelet', '/v1/triage?window=1s', '/v1/runtime', `/v1/pods/${h.deepAnnotationPod}`,
  ...ids.flatMap((id) => [`/v1/containers/${id}`, `/v1/containers/${id}/logs`, `/v1/containers/${id}/logs?tailLines=100000`, `/v1/containers/${id}/processes`, `/v1/containers/${id}/namespaces`, `/v1/containers/${id}/logs?format=text`])];
const h2 = monitorEventLoopDelay({ resolution: 5 });
const rows: [number, number, number, string][] = [];
for (const u of urls) {
  h2.reset(); h2.enable();
  const t0 = performance.now();
  const r = await agent.app.inject(u);
  const ms = performance.now() - t0;
  h2.disable();
  rows.push([Math.round(h2.max / 1e6), Math.round(ms), r.body.length, `${r.statusCode} ${u.slice(0, 110)}`]);
}
rows.sort((a, b) => b[0] - a[0]);
console.log("loop max ms\ttotal ms\tbytes\tstatus url");
for (const r of rows.slice(0, 15)) console.log(r.join("\t"));
await agent.close(); child.kill(); host.cleanup();
