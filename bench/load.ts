/**
 * Load on the FAKE 1,000-container node: autocannon on loopback, 50
 * connections, 60 s, a weighted random mix of routes (NODETRUTH_LOAD_MIX=uniform: all
 * equal), against the agent as a real process
 * as shipped (`node dist/nodetruth.mjs serve`) with the FAKE CRI runtime in another process.
 * Pass: zero errors (connection errors, timeouts, non-2xx), RSS growth < 20%
 * from the start of the run to its end. Records throughput, latency
 * percentiles, and the agent's RSS idle, during and after (and its peak, VmHWM), and the
 * longest event-loop delay of the agent during the run: every /metrics answer carries
 * nodetruth_nodejs_eventloop_lag_max_seconds, the maximum since the previous scrape (prom-client
 * resets it on each), so the maximum over all /metrics answers of the run (those of the mix and
 * one before and after) is the run's; nodetruth_eventloop_delay_max_seconds (never reset) is
 * read before and after as a cross-check.
 *
 *   npx tsx bench/load.ts [seconds=60] [connections=50]
 *   NODETRUTH_LOAD_MIX=full-node   bench/all.ts' load: /v1/containers, /v1/cgroups, /metrics, /v1/node at random
 *   NODETRUTH_BENCH_PODS=750       node size (pods × 4 containers; 250 by default)
 *   NODETRUTH_BENCH_AGENT_ENV='MALLOC_MMAP_THRESHOLD_=131072'  the agent's environment
 *   NODETRUTH_BENCH_LONGTASKS=1    every stretch the agent's loop was held > 50 ms, with its thread CPU
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { hwmBytes, rssBytes } from '../test/helpers/agent-process.js';
import { agentEnvFromBenchEnv, fakeNodeAgent, longTaskTracker, memoryBreakdown, memoryTracker, mib, readLongTasks, readMemorySamples, report, round } from './lib.js';

const [seconds = 60, connections = 50] = process.argv.slice(2).map(Number);
/** node flags for the agent, e.g. NODETRUTH_BENCH_NODE_ARGS=--max-old-space-size=64 */
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const agentEnv = agentEnvFromBenchEnv();
const tracked = process.env.NODETRUTH_BENCH_LONGTASKS === '1' ? mkdtempSync(path.join(tmpdir(), 'nodetruth-longtasks-')) : null;
const tracker = tracked ? longTaskTracker(path.join(tracked, 'long-tasks.jsonl')) : { nodeArgs: [], env: {} };
/** NODETRUTH_BENCH_MEMTRACE=1: what the agent's memory is made of, sampled inside it every 100 ms (bench/lib.ts memoryTracker) */
const memDir = process.env.NODETRUTH_BENCH_MEMTRACE === '1' ? mkdtempSync(path.join(tmpdir(), 'nodetruth-memtrace-')) : null;
const memTracker = memDir ? memoryTracker(path.join(memDir, 'memory.jsonl')) : { nodeArgs: [], env: {} };
/** NODETRUTH_BENCH_HEAPSNAPSHOT_MIB=300: one heap snapshot (into the agent's cwd) the first time its RSS is sampled at or above it */
const snapshotMiB = Number(process.env.NODETRUTH_BENCH_HEAPSNAPSHOT_MIB ?? 0);
const pods = Number(process.env.NODETRUTH_BENCH_PODS ?? 250);
const node = await fakeNodeAgent({
  pods,
  journal: true,
  nodeArgs: [...nodeArgs, ...tracker.nodeArgs, ...memTracker.nodeArgs, ...(snapshotMiB ? ['--heapsnapshot-signal=SIGUSR2'] : [])],
  env: { ...agentEnv, ...tracker.env, ...memTracker.env },
});
const pid = node.agent.pid;
/** a process's CPU time so far (utime + stime, ms): under a loaded machine the comparable cost */
const cpuMsOf = (p: number) => {
  const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const running = node.host.node.containers.filter((c) => c.state === 'CONTAINER_RUNNING');
const c = (i: number) => running[(i * 37) % running.length]!.id;
const pod = (i: number) => node.host.node.pods[(i * 13) % node.host.node.pods.length]!;

/**
 * What on-call sessions and scrapes ask, with weights: cheap reads often, the
 * full-node answers (/metrics, every cgroup) less. Each request picks its route
 * at random (seeded), so the 50 connections do not march through the list in
 * lockstep (50 identical full-node requests at once). `uniform` weighs every
 * route the same (a stress mix).
 */
const weighted: [string, number][] = [
  ['/healthz', 2],
  ['/v1/containers', 3],
  [`/v1/containers/${c(1)}`, 3],
  ['/v1/pods', 2],
  [`/v1/pods/${pod(2).id.slice(0, 12)}`, 2],
  [`/v1/cgroups?podUid=${pod(3).uid}`, 3],
  [`/v1/cgroups/${c(4)}`, 3],
  ['/v1/node', 2],
  [`/v1/containers/${c(5)}/logs?tailLines=20`, 3],
  [`/v1/containers/${c(6)}/processes`, 2],
  ['/v1/kernel?tailLines=50', 2],
  ['/v1/oom', 1],
  ['/v1/logs?query=kubelet&tailLines=20', 2],
  ['/v1/images', 1],
  ['/readyz', 1],
  ['/v1/containers?namespace=ns-3&format=text', 2],
  ['/metrics', 1],
  ['/v1/cgroups', 1],
];
const FULL_NODE: [string, number][] = [['/v1/containers', 1], ['/v1/cgroups', 1], ['/metrics', 1], ['/v1/node', 1]];
const mixEnv = process.env.NODETRUTH_LOAD_MIX;
const mix = mixEnv === 'uniform' || mixEnv === 'full-node' ? mixEnv : 'weighted';
const routes = mix === 'full-node' ? FULL_NODE : weighted;
const paths = routes.map(([p]) => p);
const bag = routes.flatMap(([p, w]) => Array.from({ length: mix === 'uniform' ? 1 : w }, () => p));
let seed = 0x9e3779b9;
const pick = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return bag[(seed >>> 0) % bag.length]!;
};

try {
  // every path answers before the clock starts
  for (const p of paths) {
    const res = await fetch(`${node.agent.url}${p}`);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${p}: status ${res.status}`);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const idleRss = rssBytes(pid);
  const loopOf = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  const LAG = 'nodetruth_nodejs_eventloop_lag_max_seconds';
  const SINCE_START = 'nodetruth_eventloop_delay_max_seconds';
  // this scrape resets the since-last-scrape maximum: what follows is the run's
  const beforeText = await (await fetch(`${node.agent.url}/metrics`)).text();
  const loopSinceStartBefore = loopOf(beforeText, SINCE_START);
  let loopRunMax = 0;
  const runFromMs = tracked ? (readLongTasks(path.join(tracked, 'long-tasks.jsonl')).at(-1)?.atMs ?? 0) + 1 : 0;

  const samples: { t: number; rss: number }[] = [];
  const t0 = Date.now();
  const runFromMemMs = memDir ? (readMemorySamples(path.join(memDir, 'memory.jsonl')).at(-1)?.t ?? 0) + 1 : 0;
  let snapshotted = false;
  const sampler = setInterval(() => {
    samples.push({ t: Date.now() - t0, rss: rssBytes(pid) });
    if (snapshotMiB && !snapshotted && samples.at(-1)!.rss >= snapshotMiB * 2 ** 20) {
      snapshotted = true;
      process.kill(pid, 'SIGUSR2');
    }
  }, 1000);
  const failed = new Map<string, number>();
  const cpuBefore = cpuMsOf(pid);
  const result = await autocannon({
    url: node.agent.url,
    connections,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        method: 'GET' as const,
        setupRequest: (req: autocannon.Request, context: object) => {
          const path = pick();
          (context as { path?: string }).path = path;
          return { ...req, path };
        },
        onResponse: (status: number, body: string, context: object) => {
          const key = `${status} ${String((context as { path?: string }).path).split('?')[0]} ${body.slice(0, 160)}`;
          if (status >= 300) failed.set(key, (failed.get(key) ?? 0) + 1);
          else if ((context as { path?: string }).path === '/metrics') loopRunMax = Math.max(loopRunMax, loopOf(body, LAG) || 0);
        },
      },
    ],
  });
  clearInterval(sampler);
  const cpuRunMs = cpuMsOf(pid) - cpuBefore;
  const endRss = rssBytes(pid);
  const afterText = await (await fetch(`${node.agent.url}/metrics`)).text();
  loopRunMax = Math.max(loopRunMax, loopOf(afterText, LAG) || 0);
  const loopSinceStartAfter = loopOf(afterText, SINCE_START);
  await new Promise((r) => setTimeout(r, 5000));
  const afterRss = rssBytes(pid);
  const heap = Object.fromEntries(
    (await (await fetch(`${node.agent.url}/metrics`)).text())
      .split('\n')
      .filter((l) => /^nodetruth_nodejs_heap_size_(used|total)_bytes /.test(l))
      .map((l) => [l.split(' ')[0]!.replace('nodetruth_nodejs_heap_size_', ''), mib(Number(l.split(' ')[1]))]),
  );

  // "start": the first sample after the first 5 s (the run has reached its working set)
  const start = samples.find((s) => s.t >= 5000) ?? samples[0]!;
  const growth = (endRss - start.rss) / start.rss;
  const errors = result.errors + result.timeouts + result.non2xx;
  const longTasks = tracked ? readLongTasks(path.join(tracked, 'long-tasks.jsonl')) : [];
  const inRun = longTasks.filter((x) => x.atMs >= runFromMs);
  const mem = memDir ? readMemorySamples(path.join(memDir, 'memory.jsonl')).filter((x) => x.t >= runFromMemMs) : [];
  const maxOf = (k: 'rss' | 'heapTotal' | 'heapUsed' | 'external' | 'arrayBuffers') => mib(Math.max(...mem.map((x) => x[k])));
  const env = [
    mix !== 'weighted' ? `NODETRUTH_LOAD_MIX=${mix} ` : '',
    pods !== 250 ? `NODETRUTH_BENCH_PODS=${pods} ` : '',
    nodeArgs.length ? `NODETRUTH_BENCH_NODE_ARGS='${nodeArgs.join(' ')}' ` : '',
    process.env.NODETRUTH_BENCH_AGENT_ENV ? `NODETRUTH_BENCH_AGENT_ENV='${process.env.NODETRUTH_BENCH_AGENT_ENV}' ` : '',
    tracked ? 'NODETRUTH_BENCH_LONGTASKS=1 ' : '',
    memDir ? 'NODETRUTH_BENCH_MEMTRACE=1 ' : '',
    snapshotMiB ? `NODETRUTH_BENCH_HEAPSNAPSHOT_MIB=${snapshotMiB} ` : '',
  ].join('');
  report('load', `${env}npx tsx bench/load.ts ${seconds} ${connections}`, {
    containers: node.host.node.containers.length,
    seconds,
    connections,
    routes: paths.length,
    mix: mix === 'uniform' ? 'uniform: every route equally often' : Object.fromEntries(routes),
    requests: result.requests.total,
    throughputReqPerSec: { mean: result.requests.average, p50: result.requests.p50 },
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    bytesPerSec: result.throughput.average,
    agentCpuMsPerAnswer: round(cpuRunMs / Math.max(1, result.requests.total), 1),
    errors: { errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx, total: errors },
    statusCodes: result.statusCodeStats,
    failures: [...failed].slice(0, 10),
    rssMiB: {
      idle: mib(idleRss),
      startOfRun: mib(start.rss),
      endOfRun: mib(endRss),
      fiveSecondsAfter: mib(afterRss),
      maxSampled: mib(Math.max(...samples.map((s) => s.rss))),
      peakVmHWM: mib(hwmBytes(pid)),
    },
    heapAfterMiB: heap,
    eventLoopMaxDelayMs: {
      duringRun: round(loopRunMax, 1),
      sinceStartBeforeRun: round(loopSinceStartBefore, 1),
      sinceStartAfterRun: round(loopSinceStartAfter, 1),
      note: 'monitorEventLoopDelay at 10 ms resolution (about 10 means no delay); the agent process only',
    },
    ...(tracked
      ? {
          longTasksAfterWarmUp: {
            over50WallMs: inRun.length,
            over100WallMs: inRun.filter((x) => x.wallMs > 100).length,
            over100CpuMs: inRun.filter((x) => x.cpuMs > 100).length,
            maxWallMs: Math.max(0, ...inRun.map((x) => x.wallMs)),
            maxCpuMs: Math.max(0, ...inRun.map((x) => x.cpuMs)),
            longestByCpu: [...inRun].sort((a, b) => b.cpuMs - a.cpuMs).slice(0, 5),
            note: 'stretches > 50 ms between two turns of a 5 ms timer in the agent, recorded after those of its start-up and the warm-up requests; cpuMs: the main thread on a core',
          },
        }
      : {}),
    ...(mem.length
      ? {
          memoryInside: {
            atPeakRss: memoryBreakdown(mem.reduce((a, b) => (b.rss > a.rss ? b : a))),
            atPeakHeapCommitted: memoryBreakdown(mem.reduce((a, b) => (b.heapTotal > a.heapTotal ? b : a))),
            maxMiB: { rss: maxOf('rss'), heapCommitted: maxOf('heapTotal'), heapUsed: maxOf('heapUsed'), external: maxOf('external'), arrayBuffers: maxOf('arrayBuffers') },
            samples: mem.length,
            note: 'sampled inside the agent every 100 ms during the run (bench/lib.ts memoryTracker); rss − heap − external: the binary, code, malloc',
          },
        }
      : {}),
    nodeArgs,
    agentEnv,
    rssGrowthStartToEnd: `${round(growth * 100, 1)}%`,
    pass: { zeroErrors: errors === 0, rssGrowthUnder20: growth < 0.2, rssUnder100MiB: Math.max(...samples.map((s) => s.rss)) < 100 * 2 ** 20 },
  });
} finally {
  await node.stop();
  if (tracked) rmSync(tracked, { recursive: true, force: true });
  if (memDir) rmSync(memDir, { recursive: true, force: true });
}
