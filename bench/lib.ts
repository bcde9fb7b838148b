/**
 * Shared pieces of the issue 8 benchmarks: the FAKE 1,000-container node with
 * its FAKE CRI runtime and the agent, each in its own process; the machine
 * description every figure in RESULTS.md carries; small statistics.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { makeFakeScaleHost, type FakeScaleHost } from '../test/fixtures/fake-node.js';
import { REPO, startAgentProcess, startFakeCriProcess, type Proc } from '../test/helpers/agent-process.js';

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

/** dist/ must be built from the current src/ (benchmarks run the agent as `node dist/cli.js`). */
export function ensureBuilt(): void {
  const cli = path.join(REPO, 'dist/cli.js');
  const newest = (dir: string): number => {
    let m = 0;
    for (const e of execFileSync('find', [dir, '-name', '*.ts', '-newer', cli]).toString().split('\n')) if (e) m = Math.max(m, statSync(e).mtimeMs);
    return m;
  };
  if (!existsSync(cli) || newest(path.join(REPO, 'src')) > 0) {
    process.stderr.write('building dist/ (npm run build)\n');
    execFileSync('npm', ['run', 'build'], { cwd: REPO, stdio: ['ignore', 2, 2] }); // stdout is the JSON report
  }
}

export interface FakeNodeAgent {
  host: FakeScaleHost;
  cri: Proc & { endpoint: string };
  agent: Proc & { url: string };
  stop(): Promise<void>;
}

/** The FAKE node (250 pods, 1,000 containers by default), its FAKE runtime, and the agent from dist/. */
export async function fakeNodeAgent(o: { pods?: number; perPod?: number; journal?: boolean; agentFlags?: string[]; nodeArgs?: string[] } = {}): Promise<FakeNodeAgent> {
  ensureBuilt();
  const host = await makeFakeScaleHost({ pods: o.pods ?? 250, perPod: o.perPod ?? 4, journal: o.journal ?? true });
  let cri: (Proc & { endpoint: string }) | undefined;
  let agent: (Proc & { url: string }) | undefined;
  try {
    cri = await startFakeCriProcess(host.options);
    agent = await startAgentProcess(
      ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn', ...(o.agentFlags ?? [])],
      { dist: true, nodeArgs: o.nodeArgs ?? [] },
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
