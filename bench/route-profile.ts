/**
 * A CPU profile of the agent answering one route repeatedly on the FAKE node (`--max-age 0`: every
 * request builds its own reading), summed by
 * package / dist file and by function: where a route's time goes.
 *
 *   npx tsx bench/route-profile.ts [route=/v1/cgroups] [containers=1000] [requests=10]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fakeNodeAgent, report, round } from './lib.js';

const route = process.argv[2] ?? '/v1/cgroups';
const [containers = 1000, requests = 10] = process.argv.slice(3).map(Number);
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-route-prof-'));
const node = await fakeNodeAgent({ pods: Math.ceil(containers / 4), perPod: 4, journal: false, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`], agentFlags: ['--cri-timeout', '10s', '--max-age', '0'] });
interface PNode { id: number; callFrame: { url: string; functionName: string; lineNumber: number } }
try {
  for (let i = 0; i < requests; i++) await (await fetch(`${node.agent.url}${route}`)).arrayBuffer();
} finally {
  await node.stop();
}
const prof = JSON.parse(readFileSync(path.join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!), 'utf8')) as { nodes: PNode[]; samples: number[]; timeDeltas: number[] };
if (process.env.ROUTE_PROFILE_KEEP) process.stderr.write(`profile kept in ${dir}\n`);
else rmSync(dir, { recursive: true, force: true });
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const where = new Map<string, number>();
const fns = new Map<string, number>();
let total = 0;
prof.samples.forEach((id, k) => {
  const n = byId.get(id)!;
  const u = n.callFrame.url;
  const w = !u ? n.callFrame.functionName || '(native)' : /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u)?.[1] ?? /\/dist\/(.+)$/.exec(u)?.[1] ?? (u.startsWith('node:') ? 'node internals' : u);
  const dt = (prof.timeDeltas[k] ?? 0) / 1000;
  where.set(w, (where.get(w) ?? 0) + dt);
  const f = `${n.callFrame.functionName || '(anon)'} ${w}:${n.callFrame.lineNumber + 1}`;
  fns.set(f, (fns.get(f) ?? 0) + dt);
  total += dt;
});
const top = (m: Map<string, number>, n: number) => Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => [k, `${round((v / total) * 100, 1)}%`]));
report('route-profile', `npx tsx bench/route-profile.ts ${route} ${containers} ${requests}`, { route, containers, requests, profiledMs: round(total), byWhere: top(where, 15), byFunction: top(fns, Number(process.env.ROUTE_PROFILE_TOP ?? 20)), note: 'the whole process life: start-up and idle included' });
