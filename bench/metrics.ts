/**
 * /metrics scrape on the FAKE 1,000-container node: time and bytes; the
 * target is <= 1.5x the floor below, in the same run. The agent is a real process (dist/cli.js) with the FAKE CRI
 * runtime in another; each scrape is a fresh HTTP request, as Prometheus makes it.
 * Floor in the same run: a plain readFileSync loop over the cgroup files the
 * series come from (no parsing, no text), interleaved with the scrapes.
 *
 *   npx tsx bench/metrics.ts [rounds=20] [pods=250] [perPod=4]
 */
import { readFileSync } from 'node:fs';
import { METRIC_CGROUP_FILES } from '../src/metrics/inputs.js';
import { walkKubepods } from '../src/readers/cgroup/cgroups.js';
import { HostFs } from '../src/readers/hostfs/hostfs.js';
import { fakeNodeAgent, median, pct, report, round, timeIt } from './lib.js';

const [rounds = 20, pods = 250, perPod = 4] = process.argv.slice(2).map(Number);
/** node flags for the agent, e.g. NODETRUTH_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' for a profile */
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const node = await fakeNodeAgent({ pods, perPod, journal: false, nodeArgs });
try {
  const scrape = async () => {
    const res = await fetch(`${node.agent.url}/metrics`);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`status ${res.status}: ${text.slice(0, 300)}`);
    return text;
  };
  const dirs = (await walkKubepods(new HostFs(node.host.root))).map((c) => c.dir.realPath);
  const floor = async () => {
    let n = 0;
    for (const d of dirs) for (const f of METRIC_CGROUP_FILES) n += readFileSync(`${d}/${f}`, 'utf8').length;
    return n;
  };
  for (let i = 0; i < 3; i++) {
    await scrape(); // warm-up: JIT, gRPC channel, page cache
    await floor();
  }
  const ms: number[] = [];
  const floorMs: number[] = [];
  let text = '';
  for (let i = 0; i < rounds; i++) {
    const r = await timeIt(scrape);
    ms.push(r.ms);
    text = r.value;
    await new Promise((r) => setTimeout(r, 200));
    floorMs.push((await timeIt(floor)).ms);
  }
  const lines = text.split('\n');
  const series = lines.filter((l) => l && !l.startsWith('#')).length;
  const perMetric = new Map<string, number>();
  for (const l of lines) if (l && !l.startsWith('#')) perMetric.set(l.split(/[{ ]/)[0]!, (perMetric.get(l.split(/[{ ]/)[0]!) ?? 0) + 1);
  report('metrics', `npx tsx bench/metrics.ts ${rounds} ${pods} ${perPod}`, {
    containers: node.host.node.containers.length,
    pods: node.host.node.pods.length,
    rounds,
    ms: { median: round(median(ms)), p95: round(pct(ms, 95)), min: round(Math.min(...ms)), max: round(Math.max(...ms)) },
    rawFileReadFloorMs: { median: round(median(floorMs)), cgroups: dirs.length, files: dirs.length * METRIC_CGROUP_FILES.length },
    ratioToFloor: round(median(ms) / median(floorMs)),
    bytes: Buffer.byteLength(text),
    series,
    metricFamilies: perMetric.size,
    largestFamilies: [...perMetric].sort((a, b) => b[1] - a[1]).slice(0, 8),
    // the agent's own account of the last scrape: how long each source took (cgroups includes waiting for the runtime's names)
    lastScrapeSourceSeconds: Object.fromEntries([...text.matchAll(/^nodetruth_scrape_source_duration_seconds\{source="(\w+)"\} (\S+)$/gm)].map((m) => [m[1], Number(m[2])])),
    targetRatioToFloor: 1.5,
  });
} finally {
  await node.stop();
}
