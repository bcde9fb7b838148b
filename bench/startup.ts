/**
 * Start-up: time from spawning `nodetruth serve` to the first 200 on /readyz, as a fresh
 * debug pod does it, on the FAKE node (250 pods × 4 = 1,000 containers by default) with its
 * FAKE CRI runtime in its own process (readiness asks the runtime, so gRPC and the CRI coders
 * are on the path). Per start also the agent's CPU time until that 200 (user + system from
 * /proc/<pid>/stat: steadier than wall time on a shared machine) and its RSS 2 s later with no
 * other request, with its anonymous part (smaps_rollup): the rest is mostly the node binary's
 * touched pages, ~5 MiB more once V8 has compiled anything with TurboFan (bench/RESULTS.md).
 * No flags, no NODE_OPTIONS: as a user runs it by hand.
 *
 * Variants, interleaved in one run (order reversed every other round), per size:
 *   tsc            `node dist/cli.js serve`        (tsc's output: one file per module)
 *   tsc+cache      the same with NODE_COMPILE_CACHE warmed by one whole start and stop
 *                  (the most a cache can hold for it)
 *   bundle         `node dist/nodetruth.mjs serve` (scripts/bundle.mjs: the package's bin)
 *   bundle+cache   the same with NODE_COMPILE_CACHE warmed as the Dockerfile warms it
 *                  (`nodetruth version` through the bundle): the image's default
 * beside a bare `node -e ""` (the runtime's own start). dist/ and the bundle are rebuilt
 * when a source under src/ is newer.
 *
 *   npx tsx bench/startup.ts [sizes=100,1000,3000] [runs=7]
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, REPO, rssBytes, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { ensureBuilt, median, mib, report, round } from './lib.js';

const sizes = (process.argv[2] ?? '100,1000,3000').split(',').map(Number);
const runs = Number(process.argv[3] ?? 7);
const SETTLE_MS = 2000;
const TICK_MS = 10; // USER_HZ 100
const CLI = path.join(REPO, 'dist/cli.js');
const BUNDLE = path.join(REPO, 'dist/nodetruth.mjs');

ensureBuilt();
const newestSrc = Math.max(...execFileSync('find', [path.join(REPO, 'src'), '-name', '*.ts']).toString().split('\n').filter(Boolean).map((f) => statSync(f).mtimeMs));
if (!existsSync(BUNDLE) || statSync(BUNDLE).mtimeMs < newestSrc) {
  process.stderr.write('bundling (npm run bundle)\n');
  execFileSync(process.execPath, [path.join(REPO, 'scripts/bundle.mjs')], { cwd: REPO, stdio: ['ignore', 2, 2] });
}

const caches: string[] = [];
const newCache = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-compile-cache-'));
  caches.push(dir);
  return dir;
};
const tscCache = newCache(); // filled by the warm-up start below
const bundleCache = newCache();
execFileSync(process.execPath, [BUNDLE, 'version'], { env: { ...process.env, NODE_COMPILE_CACHE: bundleCache }, stdio: ['ignore', 'ignore', 'inherit'] });

const anonBytes = (pid: number) => Number(/^Anonymous:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? NaN) * 1024;
const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
};

type Variant = { name: string; entry: string; env: NodeJS.ProcessEnv };
const variants: Variant[] = [
  { name: 'tsc', entry: CLI, env: {} },
  { name: 'tsc+cache', entry: CLI, env: { NODE_COMPILE_CACHE: tscCache } },
  { name: 'bundle', entry: BUNDLE, env: {} },
  { name: 'bundle+cache', entry: BUNDLE, env: { NODE_COMPILE_CACHE: bundleCache } },
];

async function start(v: Variant, host: { root: string; kmsg: string }, criEndpoint: string): Promise<{ ms: number; cpu: number; rss: number; anon: number; readyz: unknown }> {
  const port = await freePort();
  const env = { ...process.env, ...v.env };
  delete env.NODE_OPTIONS;
  if (!v.env.NODE_COMPILE_CACHE) delete env.NODE_COMPILE_CACHE;
  const t0 = performance.now();
  const child = spawn(process.execPath, [v.entry, 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', criEndpoint, '--kmsg-path', host.kmsg], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env,
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (d) => stderr.push(String(d)));
  const p = { child, pid: child.pid!, lines: [], stderr, stop: async () => null } as Proc;
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 60_000, 2);
    const ms = performance.now() - t0;
    const cpu = cpuMs(child.pid!);
    const readyz = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { ms, cpu, rss: rssBytes(child.pid!), anon: anonBytes(child.pid!), readyz };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const results: Record<string, unknown> = {};
try {
  for (const containers of sizes) {
    const host = await makeFakeScaleHost({ pods: Math.ceil(containers / 4), perPod: 4, journal: false });
    const cri = await startFakeCriProcess(host.options);
    try {
      // page cache warm, as for a pulled image; this start also fills tsc+cache's cache, while
      // the bundle's keeps only what `version` put there
      for (const v of variants) await start(v.name === 'bundle+cache' ? { ...v, env: {} } : v, host, cri.endpoint);
      const r = new Map(variants.map((v) => [v.name, { ms: [] as number[], cpu: [] as number[], rss: [] as number[], anon: [] as number[] }]));
      const bare: number[] = [];
      let readyz: unknown;
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        await once(spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }), 'exit');
        bare.push(performance.now() - t0);
        for (const v of i % 2 ? [...variants].reverse() : variants) {
          const s = await start(v, host, cri.endpoint);
          r.get(v.name)!.ms.push(s.ms);
          r.get(v.name)!.cpu.push(s.cpu);
          r.get(v.name)!.rss.push(s.rss);
          r.get(v.name)!.anon.push(s.anon);
          readyz = s.readyz;
        }
      }
      const med = (n: string, k: 'ms' | 'cpu' | 'rss') => median(r.get(n)![k]);
      results[String(containers)] = {
        bareNodeMs: round(median(bare)),
        variants: Object.fromEntries(
          [...r].map(([n, v]) => [n, { msToReadyz: { median: round(median(v.ms), 0), min: round(Math.min(...v.ms), 0), max: round(Math.max(...v.ms), 0) }, cpuMs: { median: median(v.cpu), min: Math.min(...v.cpu) }, rssMiBAfterStart: { median: mib(median(v.rss)), min: mib(Math.min(...v.rss)), max: mib(Math.max(...v.rss)) }, anonMiBAfterStart: { median: mib(median(v.anon)) } }]),
        ),
        bundleOverTsc: { wall: round(med('bundle', 'ms') / med('tsc', 'ms')), cpu: round(med('bundle', 'cpu') / med('tsc', 'cpu')), rss: round(med('bundle', 'rss') / med('tsc', 'rss')) },
        bundleCacheOverTscCache: { wall: round(med('bundle+cache', 'ms') / med('tsc+cache', 'ms')), cpu: round(med('bundle+cache', 'cpu') / med('tsc+cache', 'cpu')), rss: round(med('bundle+cache', 'rss') / med('tsc+cache', 'rss')) },
        readyz,
      };
    } finally {
      await cri.stop();
      host.cleanup();
    }
  }
  report('startup', `npx tsx bench/startup.ts ${sizes.join(',')} ${runs}`, { runs, settleMs: SETTLE_MS, targetMs: 300, targetRssMiB: 80, sizes: results });
} finally {
  for (const c of caches) rmSync(c, { recursive: true, force: true });
}
