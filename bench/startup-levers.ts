/**
 * Start-up levers measured separately, interleaved in one run on the FAKE node (issue 12):
 * start → first 200 on /readyz, and the agent's CPU time until then (user + system from
 * /proc/<pid>/stat: steadier than wall time on a loaded machine), for
 *   plain                — `node dist/cli.js serve`
 *   compile-cache        — NODE_COMPILE_CACHE=<dir warmed by one start> (what an image can ship)
 *   deploy-flags         — the V8 flags deploy/ sets in NODE_OPTIONS
 * beside a bare `node -e ""`.
 *
 *   npx tsx bench/startup-levers.ts [containers=1000] [runs=7]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, REPO, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { ensureBuilt, median, report, round } from './lib.js';

const [containers = 1000, runs = 7] = process.argv.slice(2).map(Number);
const DEPLOY_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=96'];
ensureBuilt();
const host = await makeFakeScaleHost({ pods: Math.ceil(containers / 4), perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);
const cache = mkdtempSync(path.join(tmpdir(), 'nodetruth-compile-cache-'));
const TICK_MS = 10; // USER_HZ 100

const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
};

async function start(nodeArgs: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; cpu: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, path.join(REPO, 'dist/cli.js'), 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  const p = { child, pid: child.pid!, lines: [], stderr: [], stop: async () => null } as Proc;
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 60_000, 2);
    const ms = performance.now() - t0;
    return { ms, cpu: cpuMs(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const variants: [string, string[], NodeJS.ProcessEnv][] = [
  ['plain', [], {}],
  ['compile-cache', [], { NODE_COMPILE_CACHE: cache }],
  ['deploy-flags', DEPLOY_FLAGS, {}],
  ['compile-cache + deploy-flags', DEPLOY_FLAGS, { NODE_COMPILE_CACHE: cache }],
];
try {
  await start([], { NODE_COMPILE_CACHE: cache }); // warms the cache (as an image build step would) and the page cache
  const r = new Map<string, { ms: number[]; cpu: number[] }>(variants.map(([n]) => [n, { ms: [], cpu: [] }]));
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await once(spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }), 'exit');
    bare.push(performance.now() - t0);
    for (const [n, a, e] of i % 2 ? [...variants].reverse() : variants) {
      const s = await start(a, e);
      r.get(n)!.ms.push(s.ms);
      r.get(n)!.cpu.push(s.cpu);
    }
  }
  report('startup-levers', `npx tsx bench/startup-levers.ts ${containers} ${runs}`, {
    containers,
    runs,
    bareNodeMs: round(median(bare)),
    variants: Object.fromEntries([...r].map(([n, v]) => [n, { msToReadyzMedian: round(median(v.ms)), cpuMsMedian: median(v.cpu) }])),
  });
} finally {
  rmSync(cache, { recursive: true, force: true });
  await cri.stop();
  host.cleanup();
}
