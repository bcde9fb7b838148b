/**
 * Load on the FAKE 1,000-container node (issue 8): autocannon on loopback, 50
 * connections, 60 s, a mix of routes, against the agent as a real process
 * (`node dist/cli.js serve`) with the FAKE CRI runtime in another process.
 * Pass: zero errors (connection errors, timeouts, non-2xx), RSS growth < 20%
 * from the start of the run to its end. Records throughput, latency
 * percentiles, and the agent's RSS idle, during and after (and its peak, VmHWM).
 *
 *   npx tsx bench/load.ts [seconds=60] [connections=50]
 */
import autocannon from 'autocannon';
import { hwmBytes, rssBytes } from '../test/helpers/agent-process.js';
import { fakeNodeAgent, mib, report, round } from './lib.js';

const [seconds = 60, connections = 50] = process.argv.slice(2).map(Number);
/** node flags for the agent, e.g. NODETRUTH_BENCH_NODE_ARGS=--max-old-space-size=64 */
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const node = await fakeNodeAgent({ journal: true, nodeArgs });
const pid = node.agent.pid;
const running = node.host.node.containers.filter((c) => c.state === 'CONTAINER_RUNNING');
const c = (i: number) => running[(i * 37) % running.length]!.id;
const pod = (i: number) => node.host.node.pods[(i * 13) % node.host.node.pods.length]!;

/** What an on-call session and a Prometheus scrape do, weighted toward the cheap reads. */
const paths = [
  '/healthz',
  '/v1/containers',
  `/v1/containers/${c(1)}`,
  '/v1/pods',
  `/v1/pods/${pod(2).id.slice(0, 12)}`,
  `/v1/cgroups?podUid=${pod(3).uid}`,
  `/v1/cgroups/${c(4)}`,
  '/v1/node',
  `/v1/containers/${c(5)}/logs?tailLines=20`,
  `/v1/containers/${c(6)}/processes`,
  '/v1/kernel?tailLines=50',
  '/v1/oom',
  '/v1/logs?query=kubelet&tailLines=20',
  '/v1/images',
  '/readyz',
  '/v1/containers?namespace=ns-3&format=text',
  '/metrics',
  '/v1/cgroups',
];

try {
  // every path answers before the clock starts
  for (const p of paths) {
    const res = await fetch(`${node.agent.url}${p}`);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${p}: status ${res.status}`);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const idleRss = rssBytes(pid);

  const samples: { t: number; rss: number }[] = [];
  const t0 = Date.now();
  const sampler = setInterval(() => samples.push({ t: Date.now() - t0, rss: rssBytes(pid) }), 1000);
  const failed = new Map<string, number>();
  const result = await autocannon({
    url: node.agent.url,
    connections,
    duration: seconds,
    timeout: 10,
    requests: paths.map((path) => ({
      method: 'GET' as const,
      path,
      onResponse: (status: number, body: string) => {
        if (status >= 300) failed.set(`${status} ${path.split('?')[0]} ${body.slice(0, 160)}`, (failed.get(`${status} ${path.split('?')[0]} ${body.slice(0, 160)}`) ?? 0) + 1);
      },
    })),
  });
  clearInterval(sampler);
  const endRss = rssBytes(pid);
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
  report('load', `${nodeArgs.length ? `NODETRUTH_BENCH_NODE_ARGS='${nodeArgs.join(' ')}' ` : ''}npx tsx bench/load.ts ${seconds} ${connections}`, {
    containers: node.host.node.containers.length,
    seconds,
    connections,
    routes: paths.length,
    requests: result.requests.total,
    throughputReqPerSec: { mean: result.requests.average, p50: result.requests.p50 },
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    bytesPerSec: result.throughput.average,
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
    nodeArgs,
    rssGrowthStartToEnd: `${round(growth * 100, 1)}%`,
    pass: { zeroErrors: errors === 0, rssGrowthUnder20: growth < 0.2, rssUnder100MiB: Math.max(...samples.map((s) => s.rss)) < 100 * 2 ** 20 },
  });
} finally {
  await node.stop();
}
