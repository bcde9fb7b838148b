/**
 * /v1/cgroups on a generated 1,000-container node against plain loops reading
 * the same files, in the same run, on the same tree.
 *
 *   npx tsx bench/cgroups.ts [pods=250] [containersPerPod=3] [rounds=15]
 *
 * Each pod gets a sandbox plus `containersPerPod` containers: 250 x (3 + 1) = 1,000
 * container cgroups and 250 pod cgroups, 18 interface files each (STAT_FILES). Baselines:
 * - raw-sync: readFileSync of every file in one loop (the floor: no event loop, no parsing);
 * - raw-async: fs.promises.readFile of every file, 32 cgroups at a time (what an async
 *   reader can hope for).
 * The agent's figure is the whole HTTP request through app.inject(): walk, resolve,
 * read, parse, JSON. No runtime configured (names would add a CRI round trip).
 * The reader alone (readMany, in this process) is measured against the same loop, for
 * all 18 files (/v1/cgroups) and for the 8 a /metrics scrape reads (METRIC_CGROUP_FILES):
 * what the cgroup source costs without HTTP or JSON.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { METRIC_CGROUP_FILES } from '../src/metrics/inputs.js';
import { walkKubepods } from '../src/readers/cgroup/cgroups.js';
import { readMany, STAT_FILES, type StatFile } from '../src/readers/cgroup/stats.js';
import { HostFs } from '../src/readers/hostfs/hostfs.js';
import { mapLimit } from '../src/lib/concurrency.js';
import { syntheticNodeSpec, tempHostRoot } from '../test/fixtures/node-tree.js';
import { testApp } from '../test/helpers/app.js';

const [pods = 250, perPod = 3, rounds = 15] = process.argv.slice(2).map(Number);
const node = tempHostRoot(syntheticNodeSpec({ pods, containersPerPod: perPod, driver: 'systemd', complete: true }));
const agent = await testApp(['--host-root', node.root, '--log-level', 'silent']);

try {
  const fs = new HostFs(node.root);
  const found = await walkKubepods(fs);
  const dirs = found.map((c) => c.dir.realPath);
  const containers = dirs.length - pods;

  const loop = (files: readonly string[]) => () => {
    let bytes = 0;
    for (const d of dirs) for (const f of files) bytes += readFileSync(path.join(d, f), 'utf8').length;
    return bytes;
  };
  const rawSync = loop(STAT_FILES);
  const rawMetricFiles = loop(METRIC_CGROUP_FILES);
  const reader = (only: readonly StatFile[]) => () => readMany(fs, found, undefined, only);
  const rawAsync = async () => {
    const sizes = await mapLimit(dirs, 32, async (d) => (await Promise.all(STAT_FILES.map((f) => readFile(path.join(d, f), 'utf8')))).reduce((n, s) => n + s.length, 0));
    return sizes.reduce((a, b) => a + b, 0);
  };
  const agentCall = async () => {
    const res = await agent.app.inject({ method: 'GET', url: '/v1/cgroups' });
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${res.body.slice(0, 200)}`);
    return (res.json() as { items: unknown[] }).items.length;
  };

  const time = async (fn: () => unknown) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  // warm the page cache and the JIT
  for (let i = 0; i < 3; i++) {
    rawSync();
    await rawAsync();
    await agentCall();
  }
  const n = await agentCall();
  if (n !== dirs.length) throw new Error(`agent listed ${n} cgroups, the tree has ${dirs.length}`);

  const samples = { rawSync: [] as number[], rawAsync: [] as number[], agent: [] as number[], readerAll: [] as number[], rawMetricFiles: [] as number[], readerMetricFiles: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    // interleaved, so drift in the machine's load hits all alike
    samples.rawSync.push(await time(rawSync));
    samples.rawAsync.push(await time(rawAsync));
    samples.agent.push(await time(agentCall));
    samples.readerAll.push(await time(reader(STAT_FILES as readonly StatFile[])));
    samples.rawMetricFiles.push(await time(rawMetricFiles));
    samples.readerMetricFiles.push(await time(reader(METRIC_CGROUP_FILES)));
  }
  const m = { rawSync: median(samples.rawSync), rawAsync: median(samples.rawAsync), agent: median(samples.agent) };
  const mins = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, Math.min(...v)])) as Record<keyof typeof samples, number>;
  const result = {
    containers,
    pods,
    cgroups: dirs.length,
    files: dirs.length * STAT_FILES.length,
    rounds,
    medianMs: { rawSync: round(m.rawSync), rawAsync: round(m.rawAsync), agent: round(m.agent) },
    ratio: { agentVsRawSync: round(m.agent / m.rawSync), agentVsRawAsync: round(m.agent / m.rawAsync) },
    target: { agentVsRawSync: 1.2 },
    // the reader alone, fastest of the rounds (the least disturbed by a loaded machine)
    reader: {
      minMs: Object.fromEntries(Object.entries(mins).map(([k, v]) => [k, round(v)])),
      allFilesVsRawSync: round(mins.readerAll / mins.rawSync),
      metricFilesVsRawSync: round(mins.readerMetricFiles / mins.rawMetricFiles),
      medianMetricFilesVsRawSync: round(median(samples.readerMetricFiles) / median(samples.rawMetricFiles)),
    },
    load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    node: process.version,
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await agent.close();
  node.cleanup();
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
