/**
 * One agent build on the FAKE node (1,000 containers, `--max-age 0`): its CPU for a request made
 * right after the previous answer, and for one made after 3 s idle (what the agent does when it
 * goes idle: src/server/plugins/idle-gc.ts), alternated, 8 of each, medians.
 *
 *   npx tsx bench/route-idle.ts dist/nodetruth.mjs
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, startFakeCriProcess } from '../test/helpers/agent-process.js';
const cpuMs = (pid: number) => { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
const host = await makeFakeScaleHost({ pods: 250, perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);
const port = await freePort();
const child = spawn(process.execPath, [process.argv[2]!, 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', cri.endpoint, '--cri-timeout', '10s', '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn', '--max-age', '0'], { stdio: ['ignore', 'ignore', 'inherit'] });
const url = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) { if ((await fetch(`${url}/healthz`).catch(() => null))?.status === 200) break; await new Promise((r) => setTimeout(r, 50)); }
const med = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
try {
  for (const route of ['/v1/containers', '/v1/cgroups']) {
    for (let i = 0; i < 3; i++) await (await fetch(url + route)).text();
    const res: Record<string, number[]> = { 'back-to-back': [], 'after 3 s idle': [] };
    for (let i = 0; i < 8; i++) {
      for (const [name, gap] of [['back-to-back', 0], ['after 3 s idle', 3000]] as const) {
        await new Promise((r) => setTimeout(r, gap));
        const c0 = cpuMs(child.pid!); await (await fetch(url + route)).text(); res[name]!.push(cpuMs(child.pid!) - c0);
      }
    }
    console.log(route, Object.fromEntries(Object.entries(res).map(([k, v]) => [k, med(v)])));
  }
} finally { child.kill('SIGTERM'); await cri.stop(); host.cleanup(); }
