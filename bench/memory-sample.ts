/**
 * What the agent's resident memory is made of, through a round of full-node requests and
 * a load: RSS beside V8's heap spaces, external memory and array buffers, as the agent's own
 * /metrics reports them (prom-client's nodejs_* defaults), sampled every second.
 * With NODETRUTH_BENCH_NODE_ARGS / NODETRUTH_BENCH_AGENT_ENV as bench/all.ts (figures of this
 * script in bench/RESULTS.md older than its "idle RSS after a round, explained" section ran
 * without the deploy's MALLOC_MMAP_THRESHOLD_). What the idle figure is made of, heap by
 * constructor, after a full GC and malloc's share: bench/heap-idle.ts.
 *
 *   npx tsx bench/memory-sample.ts [containers=1000] [loadSeconds=15]
 */
import autocannon from 'autocannon';
import { rssBytes } from '../test/helpers/agent-process.js';
import { agentEnvFromBenchEnv, fakeNodeAgent, mib, report } from './lib.js';

const [containers = 1000, loadSeconds = 15] = process.argv.slice(2).map(Number);
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const agentEnv = agentEnvFromBenchEnv();
const node = await fakeNodeAgent({ pods: Math.ceil(containers / 4), perPod: 4, journal: false, nodeArgs, env: agentEnv, agentFlags: ['--cri-timeout', '10s'] });
const url = node.agent.url;
const read = async (phase: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const v = (re: RegExp) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  return {
    phase,
    rss: mib(rssBytes(node.agent.pid)),
    heapTotal: mib(v(/^nodetruth_nodejs_heap_size_total_bytes (\S+)$/gm)),
    heapUsed: mib(v(/^nodetruth_nodejs_heap_size_used_bytes (\S+)$/gm)),
    external: mib(v(/^nodetruth_nodejs_external_memory_bytes (\S+)$/gm)),
    newSpace: mib(v(/^nodetruth_nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/gm)),
    oldSpace: mib(v(/^nodetruth_nodejs_heap_space_size_total_bytes\{space="old"\} (\S+)$/gm)),
    codeSpace: mib(v(/^nodetruth_nodejs_heap_space_size_total_bytes\{space="code"\} (\S+)$/gm)),
    largeObject: mib(v(/^nodetruth_nodejs_heap_space_size_total_bytes\{space="large_object"\} (\S+)$/gm)),
  };
};
const rows: object[] = [];
try {
  rows.push(await read('after start (first scrape)'));
  for (const p of ['/v1/containers', '/v1/cgroups', '/metrics', '/v1/node']) await (await fetch(`${url}${p}`)).arrayBuffer();
  rows.push(await read('after one of each'));
  await new Promise((r) => setTimeout(r, 5000));
  rows.push(await read('5 s later'));
  const routes = ['/v1/containers', '/v1/cgroups', '/metrics', '/v1/node'];
  let i = 0;
  // a sample that fails (the agent busy past the connection's life) is skipped, never an unhandled
  // rejection: that ended the bench without stopping the agent and the FAKE runtime
  const sampler = setInterval(() => void read(`load`).then((r) => rows.push(r), () => {}), 2000);
  await autocannon({ url, connections: 50, duration: loadSeconds, timeout: 20, requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: routes[i++ % routes.length]! }) }] });
  clearInterval(sampler);
  rows.push(await read('after load'));
  await new Promise((r) => setTimeout(r, 5000));
  rows.push(await read('5 s after load'));
  report('memory-sample', `npx tsx bench/memory-sample.ts ${containers} ${loadSeconds}`, { nodeArgs, agentEnv, rows });
} finally {
  await node.stop();
}
