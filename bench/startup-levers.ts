/**
 * Start-up levers measured separately, interleaved in one run on the FAKE node:
 * start → first 200 on /readyz, the agent's CPU time until then (user + system from
 * /proc/<pid>/stat: steadier than wall time on a loaded machine) and its RSS 2 s after it
 * (no other request), for each build given (a directory holding dist/, proto/ and a
 * node_modules; default: this checkout) and
 *   plain                — `node dist/cli.js serve`
 *   compile-cache        — NODE_COMPILE_CACHE=<dir warmed as the Dockerfile warms it: the
 *                          server modules imported once, no start>
 *   deploy-flags         — the V8 flags of deploy/debug-profile.yaml's NODE_OPTIONS, without
 *                          and with that cache (the heap-size flags do not invalidate it)
 *   compile-cache-start  — NODE_COMPILE_CACHE=<dir warmed by one whole start and stop> (the
 *                          last build only: is warming by import enough?)
 * beside a bare `node -e ""`. A before/after comparison builds the "before" tree elsewhere
 * (git archive REV | tar -x -C DIR; ln -s $PWD/node_modules DIR; (cd DIR && npx tsc -p
 * tsconfig.build.json)) and names both:
 *
 *   npx tsx bench/startup-levers.ts [containers=1000] [runs=7] [label=dir ...]
 *   npx tsx bench/startup-levers.ts 1000 7 before=/tmp/nt-before after=.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, REPO, rssBytes, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { ensureBuilt, median, mib, report, round } from './lib.js';

const [containersArg, runsArg, ...buildArgs] = process.argv.slice(2);
const containers = Number(containersArg ?? 1000);
const runs = Number(runsArg ?? 7);
const builds = (buildArgs.length ? buildArgs : [`this=${REPO}`]).map((a) => {
  const i = a.indexOf('=');
  return { label: a.slice(0, i), root: path.resolve(a.slice(i + 1)) };
});
const DEPLOY_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=96'];
/** What the Dockerfile's warm-up step imports (keep in step with it). */
const WARM_MODULES = ['server/app.js', 'sources.js', 'agent.js', 'config.js'];
const SETTLE_MS = 2000;
ensureBuilt();
const host = await makeFakeScaleHost({ pods: Math.ceil(containers / 4), perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);
const TICK_MS = 10; // USER_HZ 100
const caches: string[] = [];
const newCache = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'nodetruth-compile-cache-'));
  caches.push(d);
  return d;
};

const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
};

async function start(root: string, nodeArgs: string[], env: NodeJS.ProcessEnv, settleMs = SETTLE_MS): Promise<{ ms: number; cpu: number; rss: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/cli.js'), 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  const p = { child, pid: child.pid!, lines: [], stderr: [], stop: async () => null } as Proc;
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 60_000, 2);
    const ms = performance.now() - t0;
    const cpu = cpuMs(child.pid!);
    await new Promise((r) => setTimeout(r, settleMs));
    return { ms, cpu, rss: rssBytes(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

type Variant = [name: string, root: string, nodeArgs: string[], env: NodeJS.ProcessEnv];
const variants: Variant[] = [];
try {
  for (const [k, b] of builds.entries()) {
    const byImport = newCache();
    execFileSync(process.execPath, ['-e', `Promise.all(${JSON.stringify(WARM_MODULES.map((m) => path.join(b.root, 'dist', m)))}.map((f) => import(f)))`], { env: { ...process.env, NODE_COMPILE_CACHE: byImport }, stdio: 'inherit' });
    const byStart = newCache();
    await start(b.root, [], { NODE_COMPILE_CACHE: byStart }, 0); // also warms the page cache, as for a pulled image
    variants.push(
      [`${b.label} plain`, b.root, [], {}],
      [`${b.label} compile-cache`, b.root, [], { NODE_COMPILE_CACHE: byImport }],
      [`${b.label} deploy-flags`, b.root, DEPLOY_FLAGS, {}],
      [`${b.label} deploy-flags + compile-cache`, b.root, DEPLOY_FLAGS, { NODE_COMPILE_CACHE: byImport }],
    );
    if (k === builds.length - 1) variants.push([`${b.label} compile-cache-start`, b.root, [], { NODE_COMPILE_CACHE: byStart }]);
  }
  const r = new Map<string, { ms: number[]; cpu: number[]; rss: number[] }>(variants.map(([n]) => [n, { ms: [], cpu: [], rss: [] }]));
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await once(spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }), 'exit');
    bare.push(performance.now() - t0);
    for (const [n, root, a, e] of i % 2 ? [...variants].reverse() : variants) {
      const s = await start(root, a, e);
      r.get(n)!.ms.push(s.ms);
      r.get(n)!.cpu.push(s.cpu);
      r.get(n)!.rss.push(s.rss);
    }
  }
  report('startup-levers', `npx tsx bench/startup-levers.ts ${process.argv.slice(2).join(' ')}`, {
    containers,
    runs,
    builds,
    bareNodeMs: round(median(bare)),
    variants: Object.fromEntries(
      [...r].map(([n, v]) => [n, { msToReadyzMedian: round(median(v.ms)), cpuMsMedian: median(v.cpu), cpuMsMin: Math.min(...v.cpu), rssMiBMedian: mib(median(v.rss)), rssMiBMin: mib(Math.min(...v.rss)) }]),
    ),
  });
} finally {
  for (const c of caches) rmSync(c, { recursive: true, force: true });
  await cri.stop();
  host.cleanup();
}
