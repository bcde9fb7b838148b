/**
 * Clients that stop reading: the agent (`nodetruth serve` from dist/, with the deploy's
 * MALLOC_MMAP_THRESHOLD_; --debug-profile adds the debug pod's NODE_OPTIONS) on a FAKE node whose kernel log is 10 MB of records
 * half random hex (so /v1/kernel answers ~23 MB and a bundle does not gzip below the kernel's
 * socket buffers). Eight readers that send their request and never read (paused raw sockets):
 * four on /v1/kernel, two on /v1/bundle, two on /metrics. RSS before, its peak sampled every
 * 250 ms while they stall, and after they are gone; meanwhile /healthz's slowest answer,
 * whether a well-behaved client's capture is admitted, and what each stalled reader was
 * answered and whether the agent's side ended its connection by the end of the stall (cut,
 * or answered in full and then closed as an idle keep-alive).
 *
 *   npx tsx bench/stalled-readers.ts [stallSeconds=60] [--debug-profile]
 *
 * Run from another checkout (a `git worktree` of older code) with the same file to compare.
 */
import { connect, type Socket } from 'node:net';
import { appendLargeKmsg, makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { rssBytes, startAgentProcess, startFakeCriProcess } from '../test/helpers/agent-process.js';
import { ensureBuilt, mib, report, round } from './lib.js';

const stallSeconds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 60);
// --debug-profile: the debug pod's V8 limits too (a 96 MiB old space: a capture of this node does not fit it, see RESULTS.md)
const debugProfile = process.argv.includes('--debug-profile');
const ROUTES = ['/v1/kernel', '/v1/kernel', '/v1/kernel', '/v1/kernel', '/v1/bundle', '/v1/bundle', '/metrics', '/metrics'];

ensureBuilt();
const host = await makeFakeScaleHost({ pods: 10, perPod: 2 });
appendLargeKmsg(host);
const cri = await startFakeCriProcess(host.options);
const agent = await startAgentProcess(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn'], {
  dist: true,
  env: { ...(debugProfile ? { NODE_OPTIONS: '--max-semi-space-size=2 --max-old-space-size=96' } : {}), MALLOC_MMAP_THRESHOLD_: '32768' },
});
const port = Number(new URL(agent.url).port);
const alive = () => agent.child.exitCode === null && agent.child.signalCode === null;
const rss = () => (alive() ? mib(rssBytes(agent.pid)) : NaN);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Reader {
  route: string;
  s: Socket;
  head: string;
  endedByAgent: boolean;
}

try {
  // warm-up: one of each, read in full, so lazily loaded code counts in the baseline
  for (const p of ['/v1/kernel', '/metrics', '/v1/bundle']) {
    const res = await fetch(`${agent.url}${p}`).catch((err: Error) => err);
    const ok = res instanceof Response ? await res.arrayBuffer().then(() => true, () => false) : false;
    if (!ok || !alive()) throw new Error(`warm-up ${p}: ${res instanceof Response ? res.status : res.message}; agent alive: ${alive()}; ${agent.stderr.slice(-5).join(' ').slice(0, 600)}`);
  }
  await sleep(2000);
  const before = rss();

  const readers: Reader[] = ROUTES.map((route, i) => {
    const s = connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${50 + i}` });
    const r: Reader = { route, s, head: '', endedByAgent: false };
    s.on('error', () => {});
    s.once('data', (d: Buffer) => {
      s.pause();
      r.head = d.subarray(0, 12).toString('latin1');
      s.unshift(d);
    });
    s.write(`GET ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    return r;
  });
  let peak = before;
  let healthzMaxMs = 0;
  let captureDuringStall = 'not tried';
  const t0 = performance.now();
  while (performance.now() - t0 < stallSeconds * 1000 && alive()) {
    peak = Math.max(peak, rss());
    const h0 = performance.now();
    try {
      await (await fetch(`${agent.url}/healthz`, { signal: AbortSignal.timeout(5000) })).arrayBuffer();
      healthzMaxMs = Math.max(healthzMaxMs, performance.now() - h0);
    } catch {
      healthzMaxMs = Math.max(healthzMaxMs, 5000);
    }
    if (captureDuringStall === 'not tried' && performance.now() - t0 > stallSeconds * 900) {
      const res = await fetch(`${agent.url}/v1/bundle`).catch(() => null);
      captureDuringStall = res ? String(res.status) : 'no answer';
      await res?.arrayBuffer().catch(() => undefined);
    }
    await sleep(250);
  }
  const stalledFor = round((performance.now() - t0) / 1000, 1);
  const during = rss();
  // were they cut? read what is left: a socket the agent closed ends once its buffered bytes are read
  await Promise.all(
    readers.map(
      (r) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(() => resolve(), 3000);
          r.s.on('data', () => {});
          r.s.once('end', () => {
            r.endedByAgent = true;
            clearTimeout(t);
            resolve();
          });
          r.s.once('close', () => {
            clearTimeout(t);
            resolve();
          });
          r.s.resume();
        }),
    ),
  );
  const byRoute = readers.map((r) => ({ route: r.route, answer: r.head.replace(/\r.*/, ''), connectionEndedByAgentWithin: r.endedByAgent ? `${stalledFor}s` : 'no' }));
  for (const r of readers) r.s.destroy();
  await sleep(5000);
  const after = rss();
  const metrics = alive() ? await (await fetch(`${agent.url}/metrics`)).text() : '';
  report('stalled-readers', `npx tsx bench/stalled-readers.ts ${stallSeconds}${debugProfile ? ' --debug-profile' : ''}`, {
    stallSeconds,
    rssMiB: { before, peak, atEndOfStall: during, afterReadersGone: after },
    healthzMaxMs: round(healthzMaxMs, 1),
    captureByAnotherClientDuringStall: captureDuringStall,
    readers: byRoute,
    agentAlive: alive(),
    agentStderrTail: agent.stderr.slice(-3).join(' ').slice(0, 400),
    stalledClientsTotal: [...metrics.matchAll(/^nodetruth_stalled_clients_total\{action="(\w+)"\} (\S+)$/gm)].map((m) => `${m[1]}=${m[2]}`).join(' ') || 'n/a',
  });
} finally {
  await agent.stop();
  await cri.stop();
  host.cleanup();
}
