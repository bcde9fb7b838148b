/**
 * Where a start of `nodetruth serve` spends its time, up to the first 200 on /readyz:
 * runs the agent under `node --cpu-prof` on a FAKE node, stops it at the first 200 and sums
 * the profile's samples by package (node_modules/<pkg>) or by dist/ file, plus what the module
 * loader and GC took. With NODETRUTH_BENCH_AGENT_ENV as in bench/all.ts.
 *
 *   npx tsx bench/startup-profile.ts [containers=1000] [runs=3] [root=this checkout]
 * (root: another tree holding dist/, e.g. a "before" build as in bench/startup-levers.ts)
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, REPO, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { ensureBuilt, report, round } from './lib.js';

const [containers = 1000, runs = 3] = process.argv.slice(2, 4).map(Number);
const root = path.resolve(process.argv[4] ?? REPO);
const agentEnv = Object.fromEntries((process.env.NODETRUTH_BENCH_AGENT_ENV ?? '').split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
ensureBuilt();
const host = await makeFakeScaleHost({ pods: Math.ceil(containers / 4), perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);

interface Node { id: number; callFrame: { url: string; functionName: string }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const where = (url: string, fn: string): string => {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  const d = /\/dist\/(.+)$/.exec(url);
  if (d) return `dist/${d[1]}`;
  return url.startsWith('node:') ? 'node: internals' : url;
};

const totals = new Map<string, number>();
let all = 0;
try {
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-prof-'));
    const port = await freePort();
    const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=200', path.join(root, 'dist/cli.js'), 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--log-level', 'warn'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...agentEnv },
    });
    const p = { child, pid: child.pid!, lines: [], stderr: [], stop: async () => null } as Proc;
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 60_000, 2);
    child.kill('SIGTERM');
    await once(child, 'exit');
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!;
    const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile;
    rmSync(dir, { recursive: true, force: true });
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    prof.samples.forEach((id, k) => {
      const n = byId.get(id)!;
      const key = where(n.callFrame.url, n.callFrame.functionName);
      const dt = (prof.timeDeltas[k] ?? 0) / 1000;
      totals.set(key, (totals.get(key) ?? 0) + dt);
      all += dt;
    });
  }
  const top = [...totals].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, ms]) => [k, round(ms / runs, 1)]);
  report('startup-profile', `npx tsx bench/startup-profile.ts ${process.argv.slice(2).join(' ')}`, { containers, runs, root, profiledMsPerStart: round(all / runs, 1), selfMsPerStartByWhere: Object.fromEntries(top), note: 'self time until SIGTERM after the first /readyz 200 (includes idle and the exit)' });
} finally {
  await cri.stop();
  host.cleanup();
}
