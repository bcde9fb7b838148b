/**
 * Every figure of the agent's targets (start-up, RSS, route costs, load, the event loop) in one
 * run, each beside its baseline, at several
 * node sizes (FAKE node: pods × 4 containers, test/fixtures/fake-node.ts; the FAKE CRI
 * runtime in its own process; the agent as shipped: `node dist/nodetruth.mjs serve`).
 *
 *   npx tsx bench/all.ts [containers=100,1000,3000] [loadSeconds=30] [rounds=7]
 *   NODETRUTH_BENCH_NODE_ARGS='--max-semi-space-size=2'  node flags for the agent
 *   NODETRUTH_BENCH_AGENT_ENV='NODE_COMPILE_CACHE=/tmp/x'  environment for the agent
 *   NODETRUTH_BENCH_BUNDLE=/tmp/before/dist/nodetruth.mjs  another build's bundle (a before/after pair)
 *
 * Per size, in this order (one agent process for the whole size, so the RSS figures
 * are one process's history):
 *  1. start → first 200 on /readyz: `rounds` fresh agents, each beside a bare `node -e ""`;
 *  2. RSS after start: the agent after /healthz answered and 2 s of quiet;
 *  3. /v1/containers vs raw grpc-js ListContainers + ListPodSandbox + ContainerStatus of each
 *     (16 at a time), interleaved; in 3-5 the agent's requests are 1.1 s apart, past the
 *     default --max-age (1 s): each is a reading of its own, never an answer a reading shares;
 *  4. /v1/cgroups over HTTP vs a readFileSync loop over the same cgroups' STAT_FILES;
 *  5. /metrics over HTTP vs a readFileSync loop over the files its series use (the cgroups'
 *     METRIC_CGROUP_FILES and every /proc/<pid>/stat, for the D/Z process series);
 *  6. RSS idle after that round: once the idle GC has had its time (src/server/plugins/idle-gc.ts:
 *     the memory reducer's check, else the forced collection), 15 s after the last answer;
 *  7. load: autocannon, 50 connections, `loadSeconds`, a random pick per request among
 *     /v1/containers, /v1/cgroups, /metrics, /v1/node; p50/p99, req/s, errors by status;
 *     RSS sampled every 250 ms and VmHWM (the process's peak since start); the agent's CPU
 *     per answer (on a loaded machine the one comparable throughput figure);
 *  8. the event loop's longest delay since start (nodetruth_eventloop_delay_max_seconds)
 *     after step 6 and after the load.
 * Baselines run in this (the bench) process, which competes for the same 2 cores.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import autocannon from 'autocannon';
import { METRIC_CGROUP_FILES } from '../src/metrics/inputs.js';
import { STAT_FILES } from '../src/readers/cgroup/stats.js';
import { criServices } from '../src/readers/cri/proto.js';
import { mapLimit } from '../src/lib/concurrency.js';
import { IDLE_GC_MS, REDUCER_GRACE_MS } from '../src/server/plugins/idle-gc.js';
import { makeFakeScaleHost, type FakeScaleHost } from '../test/fixtures/fake-node.js';
import { BUNDLE, freePort, hwmBytes, rssBytes, startAgentProcess, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { ensureBuilt, fileFloors, machine, median, mib, pct, report, round, timeIt } from './lib.js';

const args = process.argv.slice(2);
const sizes = (args[0] ?? '100,1000,3000').split(',').map(Number);
const loadSeconds = Number(args[1] ?? 30);
const rounds = Number(args[2] ?? 7);
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const agentEnv = Object.fromEntries(
  (process.env.NODETRUTH_BENCH_AGENT_ENV ?? '')
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const LOAD_ROUTES = ['/v1/containers', '/v1/cgroups', '/metrics', '/v1/node'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** a process's CPU time so far (utime + stime, ms) */
const cpuMsOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

function agentFlags(host: FakeScaleHost, endpoint: string): string[] {
  // a 10 s CRI deadline: on this shared machine (load 10-20) the FAKE runtime, in its own process,
  // does not always answer 3,000 statuses within the default 2 s; this bench is about cost
  return ['--host-root', host.root, '--cri-endpoint', endpoint, '--cri-timeout', '10s', '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn'];
}

async function bareNode(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  return performance.now() - t0;
}

async function startToReadyz(flags: string[]): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, BUNDLE, 'serve', '--listen', `127.0.0.1:${port}`, ...flags], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...agentEnv },
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (d) => stderr.push(String(d)));
  const p = { child, pid: child.pid!, lines: [], stderr, stop: async () => null } as Proc;
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 60_000, 2);
    return performance.now() - t0;
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const loopMaxMs = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`).catch(() => fetch(`${url}/metrics`))).text();
  return round(Number(/^nodetruth_eventloop_delay_max_seconds (\S+)$/m.exec(text)?.[1] ?? NaN) * 1000, 1);
};

async function measure(containers: number) {
  const pods = Math.ceil(containers / 4);
  const host = await makeFakeScaleHost({ pods, perPod: 4, journal: false });
  const cri = await startFakeCriProcess(host.options);
  const flags = agentFlags(host, cri.endpoint);
  let agent: (Proc & { url: string }) | undefined;
  const { RuntimeService } = criServices();
  const raw = new RuntimeService(`unix:${cri.endpoint.replace(/^unix:\/\//, '')}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 });
  const call = <T>(method: string, req: object) =>
    new Promise<T>((resolve, reject) =>
      (raw as unknown as Record<string, Function>)[method]!.call(raw, req, { deadline: Date.now() + 30_000 }, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
    );
  try {
    // 1. start-up
    await startToReadyz(flags); // page cache warm, as for a pulled image
    const startup = { agent: [] as number[], bare: [] as number[] };
    for (let i = 0; i < rounds; i++) {
      startup.bare.push(await bareNode());
      startup.agent.push(await startToReadyz(flags));
    }

    // 2. RSS after start
    agent = await startAgentProcess(flags, { dist: true, nodeArgs, env: agentEnv });
    const url = agent.url;
    await sleep(2000);
    const rssStart = rssBytes(agent.pid);

    const get = async (p: string) => {
      // once more on a connection error: a pooled keep-alive socket the agent closed (5 s idle)
      // just as this request went out, on a machine where timers fire late
      const res = await fetch(`${url}${p}`).catch(() => fetch(`${url}${p}`));
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${p}: status ${res.status}: ${text.slice(0, 200)}`);
      return text;
    };
    const floors = await fileFloors(host.root);
    const rawContainers = async () => {
      const [list] = await Promise.all([call<{ containers: { id: string }[] }>('ListContainers', {}), call('ListPodSandbox', {})]);
      await mapLimit(list.containers, 16, (c) => call('ContainerStatus', { containerId: c.id, verbose: false }));
      return list.containers.length;
    };
    const bytes: Record<string, number> = {};
    const agentGet = (p: string) => async () => {
      const text = await get(p);
      bytes[p] = Buffer.byteLength(text);
      return text;
    };
    /** agent and baseline alternately, `rounds` times, which goes first alternating too */
    const pair = async (agentFn: () => Promise<unknown>, baseFn: () => Promise<unknown>, gapMs: number) => {
      for (let i = 0; i < 2; i++) {
        await agentFn();
        await baseFn();
      } // warm-up: JIT, channel, page cache
      const a: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < rounds; i++) {
        await sleep(gapMs);
        if (i % 2) {
          a.push((await timeIt(agentFn)).ms);
          b.push((await timeIt(baseFn)).ms);
        } else {
          b.push((await timeIt(baseFn)).ms);
          await sleep(gapMs);
          a.push((await timeIt(agentFn)).ms);
        }
      }
      return { agentMs: round(median(a)), agentP95Ms: round(pct(a, 95)), baselineMs: round(median(b)), ratio: round(median(a) / median(b)) };
    };
    // 3-5
    const containersFig = await pair(agentGet('/v1/containers'), rawContainers, 1100);
    // each request past --max-age (1 s by default) of the one before: a reading of its own, not an answer it shares
    const cgroupsFig = await pair(agentGet('/v1/cgroups'), async () => floors.cgroupsFloor(), 1100);
    const metricsFig = await pair(agentGet('/metrics'), async () => floors.metricsFloor(), 1100);
    await get('/v1/node');
    // 6
    await sleep(IDLE_GC_MS + REDUCER_GRACE_MS + 3000);
    const rssIdle = rssBytes(agent.pid);
    const loopBeforeLoad = await loopMaxMs(url);

    // 7. load
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssBytes(agent!.pid)), 250);
    const statuses = new Map<string, number>();
    let seed = 0x9e3779b9;
    const pick = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return LOAD_ROUTES[(seed >>> 0) % LOAD_ROUTES.length]!;
    };
    const loadMachine = machine().load;
    const cpuBeforeLoad = cpuMsOf(agent.pid);
    const result = await autocannon({
      url,
      connections: 50,
      duration: loadSeconds,
      timeout: 10,
      requests: [
        {
          method: 'GET' as const,
          setupRequest: (req: autocannon.Request, ctx: object) => {
            const p = pick();
            (ctx as { p?: string }).p = p;
            return { ...req, path: p };
          },
          onResponse: (status: number, _body: string, ctx: object) => {
            const k = `${status} ${(ctx as { p?: string }).p}`;
            statuses.set(k, (statuses.get(k) ?? 0) + 1);
          },
        },
      ],
    });
    clearInterval(sampler);
    const cpuLoadMs = cpuMsOf(agent.pid) - cpuBeforeLoad;
    const loopAfterLoad = await loopMaxMs(url);
    await sleep(5000);
    const rssAfterLoad = rssBytes(agent.pid);
    const heap = Object.fromEntries(
      (await get('/metrics'))
        .split('\n')
        .filter((l) => /^nodetruth_nodejs_heap_size_(used|total)_bytes /.test(l))
        .map((l) => [l.split(' ')[0]!.replace('nodetruth_nodejs_heap_size_', ''), mib(Number(l.split(' ')[1]))]),
    );
    return {
      containers: host.node.containers.length,
      pods: host.node.pods.length,
      cgroups: floors.cgroups,
      startToReadyzMs: { median: round(median(startup.agent)), min: round(Math.min(...startup.agent)), max: round(Math.max(...startup.agent)), bareNodeMedian: round(median(startup.bare)) },
      rssMiB: { afterStart: mib(rssStart), idleAfterOneRound: mib(rssIdle), loadMaxSampled: mib(Math.max(...samples)), peakVmHWM: mib(hwmBytes(agent.pid)), fiveSecondsAfterLoad: mib(rssAfterLoad) },
      heapAfterLoadMiB: heap,
      v1Containers: { ...containersFig, vs: 'raw ListContainers + ListPodSandbox + ContainerStatus each, 16 at a time', bytes: bytes['/v1/containers'] },
      v1Cgroups: { ...cgroupsFig, vs: `readFileSync loop, ${floors.cgroups} cgroups × ${STAT_FILES.length} files`, bytes: bytes['/v1/cgroups'] },
      metrics: { ...metricsFig, vs: `readFileSync loop, ${floors.cgroups} cgroups × ${METRIC_CGROUP_FILES.length} files + ${floors.statFiles} /proc/<pid>/stat`, bytes: bytes['/metrics'] },
      load: {
        routes: LOAD_ROUTES,
        seconds: loadSeconds,
        connections: 50,
        machineLoadAtStart: loadMachine,
        requests: result.requests.total,
        reqPerSec: round(result.requests.total / loadSeconds, 1),
        // the agent's CPU (user + system) per answer: comparable between runs on a loaded machine, where req/s is not
        agentCpuMsPerRequest: round(cpuLoadMs / Math.max(1, result.requests.total), 2),
        agentCpuShare: round(cpuLoadMs / (loadSeconds * 1000), 2),
        latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
        errors: { socket: result.errors, timeouts: result.timeouts, non2xx: result.non2xx },
        byStatusAndRoute: Object.fromEntries([...statuses].sort()),
      },
      eventLoopMaxDelayMs: { afterOneRound: loopBeforeLoad, afterLoad: loopAfterLoad, note: 'since start, 10 ms resolution' },
    };
  } finally {
    raw.close();
    await agent?.stop();
    await cri.stop();
    host.cleanup();
  }
}

ensureBuilt();
const out: object[] = [];
for (const n of sizes) {
  process.stderr.write(`bench/all: ${n} containers (load ${machine().load})\n`);
  const fig = await measure(n);
  process.stderr.write(`${JSON.stringify(fig)}\n`);
  out.push(fig);
}
report('all', `${process.env.NODETRUTH_BENCH_BUNDLE ? `NODETRUTH_BENCH_BUNDLE=${process.env.NODETRUTH_BENCH_BUNDLE} ` : ''}${nodeArgs.length ? `NODETRUTH_BENCH_NODE_ARGS='${nodeArgs.join(' ')}' ` : ''}${Object.keys(agentEnv).length ? `NODETRUTH_BENCH_AGENT_ENV='${process.env.NODETRUTH_BENCH_AGENT_ENV}' ` : ''}npx tsx bench/all.ts ${sizes.join(',')} ${loadSeconds} ${rounds}`, {
  nodeArgs,
  agentEnv,
  uptimeAtEnd: readFileSync('/proc/loadavg', 'utf8').trim(),
  sizes: out,
});
