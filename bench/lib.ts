/**
 * Shared pieces of the benchmarks: the FAKE 1,000-container node with
 * its FAKE CRI runtime and the agent, each in its own process; the machine
 * description every figure in RESULTS.md carries; small statistics.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { METRIC_CGROUP_FILES } from '../src/metrics/inputs.js';
import { walkKubepods } from '../src/readers/cgroup/cgroups.js';
import { STAT_FILES } from '../src/readers/cgroup/stats.js';
import { HostFs } from '../src/readers/hostfs/hostfs.js';
import { makeFakeScaleHost, type FakeScaleHost } from '../test/fixtures/fake-node.js';
import { BUNDLE, REPO, startAgentProcess, startFakeCriProcess, type Proc } from '../test/helpers/agent-process.js';

export interface Machine {
  nproc: number;
  cpu: string;
  memTotalGiB: number;
  memAvailableGiB: number;
  node: string;
  load: string;
}

export function machine(): Machine {
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(meminfo)?.[1] ?? NaN);
  const model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? '?';
  return {
    nproc: Number(execFileSync('nproc').toString().trim()),
    cpu: model,
    memTotalGiB: Math.round((kb('MemTotal') / 2 ** 20) * 10) / 10,
    memAvailableGiB: Math.round((kb('MemAvailable') / 2 ** 20) * 10) / 10,
    node: process.version,
    load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
}

/**
 * dist/ and the bundle must be built from the current src/ (benchmarks run the agent as shipped:
 * `node dist/nodetruth.mjs`, BUNDLE); both are rebuilt when a source file is newer.
 */
export function ensureBuilt(): void {
  const stale = (file: string): boolean => !existsSync(file) || execFileSync('find', [path.join(REPO, 'src'), '-name', '*.ts', '-newer', file]).toString().trim() !== '';
  // stdout is the JSON report: the builds write to stderr
  if (stale(path.join(REPO, 'dist/cli.js'))) {
    process.stderr.write('building dist/ (npm run build)\n');
    execFileSync('npm', ['run', 'build'], { cwd: REPO, stdio: ['ignore', 2, 2] });
  }
  if (stale(BUNDLE)) {
    process.stderr.write('bundling (npm run bundle)\n');
    execFileSync('npm', ['run', 'bundle'], { cwd: REPO, stdio: ['ignore', 2, 2] });
  }
}

export interface FakeNodeAgent {
  host: FakeScaleHost;
  cri: Proc & { endpoint: string };
  agent: Proc & { url: string };
  stop(): Promise<void>;
}

/** The FAKE node (250 pods, 1,000 containers by default), its FAKE runtime, and the agent as shipped (BUNDLE). */
export async function fakeNodeAgent(o: { pods?: number; perPod?: number; journal?: boolean; agentFlags?: string[]; nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<FakeNodeAgent> {
  ensureBuilt();
  const host = await makeFakeScaleHost({ pods: o.pods ?? 250, perPod: o.perPod ?? 4, journal: o.journal ?? true });
  let cri: (Proc & { endpoint: string }) | undefined;
  let agent: (Proc & { url: string }) | undefined;
  try {
    cri = await startFakeCriProcess(host.options);
    agent = await startAgentProcess(
      ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn', ...(o.agentFlags ?? [])],
      { dist: true, nodeArgs: o.nodeArgs ?? [], env: o.env ?? {} },
    );
  } catch (err) {
    await cri?.stop();
    host.cleanup();
    throw err;
  }
  const started = { cri, agent };
  return {
    host,
    ...started,
    async stop() {
      await started.agent.stop();
      await started.cri.stop();
      host.cleanup();
    },
  };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
export const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
export const mib = (b: number) => round(b / 2 ** 20, 1);

export async function timeIt<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export function report(name: string, command: string, result: object): void {
  process.stdout.write(`${JSON.stringify({ bench: name, command, date: new Date().toISOString(), machine: machine(), ...result }, null, 2)}\n`);
}

/**
 * The agent's environment from NODETRUTH_BENCH_AGENT_ENV ('K=V K2=V2'), as bench/all.ts reads it
 * (e.g. the DaemonSet's MALLOC_MMAP_THRESHOLD_=131072).
 */
export function agentEnvFromBenchEnv(): Record<string, string> {
  return Object.fromEntries(
    (process.env.NODETRUTH_BENCH_AGENT_ENV ?? '')
      .split(' ')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/**
 * A tracker of long tasks inside the agent: node flags and environment that preload
 * a 5 ms interval timer; every stretch the event loop was held more than 50 ms is appended to
 * `file` as one JSON line: when (ms since the tracker started), wall ms, and the main thread's
 * CPU ms over it (process.threadCpuUsage). CPU close to wall is the agent's own work; wall far
 * above CPU is the thread waiting for a core (a loaded machine), which no code change removes.
 * The first stretch is the start-up (module loading), before the agent listens.
 */
export function longTaskTracker(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  const src = `import { appendFileSync } from 'node:fs';
const out = process.env.NODETRUTH_LONGTASKS_FILE;
const t0 = process.hrtime.bigint();
let last = t0, cpu = process.threadCpuUsage();
setInterval(() => {
  const now = process.hrtime.bigint(), c = process.threadCpuUsage(), wall = Number(now - last) / 1e6;
  if (wall > 50) appendFileSync(out, JSON.stringify({ atMs: Math.round(Number(last - t0) / 1e6), wallMs: Math.round(wall), cpuMs: Math.round((c.user - cpu.user + c.system - cpu.system) / 1000) }) + '\\n');
  last = now; cpu = c;
}, 5).unref();`;
  return { nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(src)}`], env: { NODETRUTH_LONGTASKS_FILE: file } };
}

export interface LongTask {
  atMs: number;
  wallMs: number;
  cpuMs: number;
}

export function readLongTasks(file: string): LongTask[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LongTask);
}

/**
 * A sampler of what the agent's memory is made of, preloaded like longTaskTracker: every
 * `everyMs` one JSON line to `file` with RSS (VmRSS), V8's heap (committed and used, per space),
 * external memory and array buffers (process.memoryUsage). What is left of RSS beyond the heap
 * and the external memory is the binary's pages, code and malloc's arenas.
 */
export function memoryTracker(file: string, everyMs = 100): { nodeArgs: string[]; env: Record<string, string> } {
  const src = `import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
const out = process.env.NODETRUTH_MEMTRACE_FILE;
const t0 = Date.now();
const kb = (s, k) => Number(new RegExp('^' + k + ':\\\\s+(\\\\d+)', 'm').exec(s)?.[1] ?? 0) * 1024;
setInterval(() => {
  const st = readFileSync('/proc/self/status', 'utf8'), m = process.memoryUsage();
  const spaces = {};
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name.replace('_space', '')] = [s.space_size, s.space_used_size];
  appendFileSync(out, JSON.stringify({ t: Date.now() - t0, rss: kb(st, 'VmRSS'), hwm: kb(st, 'VmHWM'), heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, spaces }) + '\\n');
}, ${everyMs}).unref();`;
  return { nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(src)}`], env: { NODETRUTH_MEMTRACE_FILE: file } };
}

export interface MemorySample {
  t: number;
  rss: number;
  hwm: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, [committed: number, used: number]>;
}

export function readMemorySamples(file: string): MemorySample[] {
  return readLongTasks(file) as unknown as MemorySample[];
}

/** A sample in MiB: RSS, the heap (committed / used, the large spaces), external, the rest of RSS. */
export function memoryBreakdown(s: MemorySample): Record<string, number | string> {
  const space = (n: string) => `${mib(s.spaces[n]?.[0] ?? 0)} / ${mib(s.spaces[n]?.[1] ?? 0)}`;
  return {
    atMs: s.t,
    rss: mib(s.rss),
    heapCommitted: mib(s.heapTotal),
    heapUsed: mib(s.heapUsed),
    'new (committed / used)': space('new'),
    'old (committed / used)': space('old'),
    'large_object (committed / used)': space('large_object'),
    'code (committed / used)': space('code'),
    external: mib(s.external),
    arrayBuffers: mib(s.arrayBuffers),
    'rss − heap − external': mib(s.rss - s.heapTotal - s.external),
  };
}

/**
 * The file floors the routes are measured against: a readFileSync loop over the kubepods
 * cgroups' STAT_FILES (/v1/cgroups), and over their METRIC_CGROUP_FILES plus every
 * /proc/<pid>/stat (/metrics: its D/Z process series read each process's stat). Each returns
 * the characters read.
 */
export async function fileFloors(root: string): Promise<{ cgroups: number; statFiles: number; cgroupsFloor: () => number; metricsFloor: () => number }> {
  const dirs = (await walkKubepods(new HostFs(root))).map((c) => c.dir.realPath);
  const statFiles = readdirSync(path.join(root, 'proc'))
    .filter((n) => /^[1-9]\d*$/.test(n))
    .map((n) => path.join(root, 'proc', n, 'stat'));
  const readLoop = (files: readonly string[]) => {
    let n = 0;
    for (const d of dirs) for (const f of files) n += readFileSync(`${d}/${f}`, 'utf8').length;
    return n;
  };
  return {
    cgroups: dirs.length,
    statFiles: statFiles.length,
    cgroupsFloor: () => readLoop(STAT_FILES),
    metricsFloor: () => {
      let n = readLoop(METRIC_CGROUP_FILES);
      for (const f of statFiles) n += readFileSync(f, 'utf8').length;
      return n;
    },
  };
}
