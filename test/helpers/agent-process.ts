/**
 * The agent and the FAKE CRI runtime as real processes, for the checks that
 * app.inject cannot make (children, open fds, RSS, real HTTP limits, start-up)
 * and for benchmarks. Each process is stopped by its own PID, never by name.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FakeScaleHost, FakeScaleOptions } from '../fixtures/fake-node.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The agent as shipped (scripts/bundle.mjs: the image's entry and the package's bin). */
/** The shipped bundle; NODETRUTH_BENCH_BUNDLE names another build's (a bench's before/after pair). */
export const BUNDLE = process.env.NODETRUTH_BENCH_BUNDLE || path.join(REPO, 'dist/nodetruth.mjs');

export interface Proc {
  child: ChildProcess;
  pid: number;
  /** stdout lines (the agent's JSON log) */
  lines: string[];
  stderr: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function track(child: ChildProcess): Proc {
  const lines: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    pid: child.pid!,
    lines,
    stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        try {
          return await exited;
        } finally {
          clearTimeout(t);
        }
      }
      return child.exitCode;
    },
  };
}

async function waitForLine(p: Proc, match: (l: string) => boolean, timeoutMs: number, what: string): Promise<string> {
  const started = Date.now();
  for (;;) {
    const hit = p.lines.find(match);
    if (hit) return hit;
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`${what} exited early: ${p.stderr.join('\n')}`);
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: no start-up line within ${timeoutMs} ms: ${p.stderr.join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The FAKE CRI runtime of a fake scale node, in its own process. */
export async function startFakeCriProcess(o: FakeScaleOptions): Promise<Proc & { endpoint: string }> {
  const arg = JSON.stringify({ pods: o.pods, perPod: o.perPod, seed: o.seed, nowNs: o.nowNs.toString() });
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'test/helpers/fake-cri-process.ts'), arg], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const p = track(child);
  let line: string;
  try {
    line = await waitForLine(p, (l) => l.startsWith('{"endpoint"'), 60_000, 'fake CRI');
  } catch (err) {
    await p.stop('SIGKILL');
    throw err;
  }
  return Object.assign(p, { endpoint: (JSON.parse(line) as { endpoint: string }).endpoint });
}

/** A free loopback port (bound and released; the agent takes it a moment later). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as AddressInfo).port;
  srv.close();
  await once(srv, 'close');
  return port;
}

/** Poll `url` until it answers 200; the milliseconds it took. */
export async function waitFor200(url: string, p: Proc, timeoutMs = 60_000, everyMs = 5): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - started;
    } catch {
      /* not listening yet */
    }
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`agent exited early: ${p.stderr.join('\n')}`);
    if (performance.now() - started > timeoutMs) throw new Error(`agent: ${url} not 200 within ${timeoutMs} ms: ${p.stderr.join('\n')}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * `nodetruth serve` as a child process on a free loopback port, ready when
 * /healthz answers. `dist: true` runs the shipped bundle, dist/nodetruth.mjs (benchmarks,
 * start-up; `npm run build && npm run bundle`); otherwise src/cli.ts via tsx.
 */
export async function startAgentProcess(flags: string[], o: { dist?: boolean; env?: NodeJS.ProcessEnv; nodeArgs?: string[]; nodeOptions?: string } = {}): Promise<Proc & { url: string }> {
  const entry = o.dist ? [BUNDLE] : ['--import', 'tsx', path.join(REPO, 'src/cli.ts')];
  const port = await freePort();
  const argv = [...(o.nodeArgs ?? []), ...entry, 'serve', '--listen', `127.0.0.1:${port}`, ...flags];
  // nodeOptions: exactly these NODE_OPTIONS, set by a shell that then execs node (same pid).
  // tap's processinfo adds its own --import (coverage, source maps: tens of MiB of heap) to
  // the NODE_OPTIONS of every child the test spawns; a heap-bound test must run without it.
  const env = { ...process.env, ...o.env, ...(o.nodeOptions === undefined ? {} : { NODETRUTH_EXACT_NODE_OPTIONS: o.nodeOptions }) };
  const child =
    o.nodeOptions === undefined
      ? spawn(process.execPath, argv, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', 'NODE_OPTIONS="$NODETRUTH_EXACT_NODE_OPTIONS" exec "$0" "$@"', process.execPath, ...argv], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const p = track(child);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor200(`${url}/healthz`, p, 60_000, 20);
  } catch (err) {
    await p.stop('SIGKILL'); // never leave an agent behind when it did not come up
    throw err;
  }
  return Object.assign(p, { url });
}

// ---- what /proc says about a process ----------------------------------------------------

/** PIDs whose parent is `pid` (children still alive or not yet reaped). */
export function childrenOf(pid: number): { pid: number; comm: string; state: string }[] {
  const out: { pid: number; comm: string; state: string }[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const [state, ppid] = stat.slice(close + 2).split(' ');
      if (Number(ppid) === pid) out.push({ pid: Number(e), comm: stat.slice(stat.indexOf('(') + 1, close), state: state! });
    } catch {
      /* gone */
    }
  }
  return out;
}

export function openFds(pid: number): { count: number; targets: string[] } {
  const fds = readdirSync(`/proc/${pid}/fd`);
  const targets: string[] = [];
  for (const fd of fds) {
    try {
      targets.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      /* closed meanwhile */
    }
  }
  return { count: fds.length, targets };
}

export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

export function hwmBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/**
 * A fake node served for real: its FAKE CRI and `nodetruth serve` over it (host root, CRI
 * endpoint and kernel log given, then `flags`), each a process; at the end of `t` both are
 * stopped and the host removed, whatever failed on the way.
 */
export async function serveFakeNode(
  t: { teardown(fn: () => unknown): void },
  host: FakeScaleHost,
  flags: string[],
  o: Parameters<typeof startAgentProcess>[1] = {},
): Promise<{ cri: Proc & { endpoint: string }; agent: Proc & { url: string } }> {
  const started: { cri?: Proc & { endpoint: string }; agent?: Proc & { url: string } } = {};
  t.teardown(async () => {
    await started.agent?.stop();
    await started.cri?.stop();
    host.cleanup();
  });
  const cri = (started.cri = await startFakeCriProcess(host.options));
  const agent = (started.agent = await startAgentProcess(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, ...flags], o));
  return { cri, agent };
}
