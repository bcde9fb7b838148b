/**
 * Follow streams opened and aborted 1,000 times in total (journal, kernel log,
 * container logs: whichever /openapi.json lists with a `follow` parameter),
 * against the agent as a real process on a FAKE node. Afterwards the agent has
 * no child process left (journalctl children are reaped) and no more open file
 * descriptors than before (kmsg and CRI log files are closed).
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { mapLimit } from '../../src/util/concurrency.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { childrenOf, openFds, startAgentProcess, startFakeCriProcess } from '../helpers/agent-process.js';

const TOTAL = Number(process.env.NODETRUTH_STREAMS ?? 1000);
const CONCURRENCY = 8;

const host = await makeFakeScaleHost({ pods: 10, perPod: 2, journal: true, logLines: 20 });
const started: { cri?: Awaited<ReturnType<typeof startFakeCriProcess>>; agent?: Awaited<ReturnType<typeof startAgentProcess>> } = {};
t.teardown(async () => {
  await started.agent?.stop();
  await started.cri?.stop();
  host.cleanup();
});
const cri = (started.cri = await startFakeCriProcess(host.options));
const agent = (started.agent = await startAgentProcess(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--max-follows', '64']));

const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as { paths: Record<string, { get?: { parameters?: { name: string }[] } }> };
const running = host.node.containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
const streamUrls = Object.entries(doc.paths)
  .filter(([, ops]) => ops.get?.parameters?.some((p) => p.name === 'follow'))
  .map(([p]) => {
    const base = p.replace('{id}', running.id);
    return p === '/v1/logs' ? `${base}?query=kubelet&follow=true` : `${base}?follow=true`;
  });

/** Open a follow stream, wait for its headers and first bytes (or 500 ms), then abort it. */
function openAndAbort(path: string, sse: boolean): Promise<{ status: number; firstBytes: number }> {
  return new Promise((resolve) => {
    let status = 0;
    let firstBytes = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ status, firstBytes });
    };
    const timer = setTimeout(finish, 500);
    const req = httpRequest(`${agent.url}${path}`, { agent: false, headers: sse ? { accept: 'text/event-stream' } : {} }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (c: Buffer) => {
        firstBytes += c.length;
        finish();
      });
      res.on('error', finish);
    });
    req.on('error', finish);
    req.end();
  });
}

/** Children of the agent, less tsx's esbuild service (a loader artifact: dist/cli.js has none). */
const agentChildren = () => childrenOf(agent.pid).filter((c) => c.comm !== 'esbuild');

async function settle(check: () => boolean, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

t.test(`${TOTAL} follow streams opened and aborted`, async (t) => {
  t.ok(streamUrls.length > 0, `follow routes: ${streamUrls.join(' ')}`);
  // warm-up: one of each, so lazily opened things (the gRPC channel, caches) count in the baseline
  for (const u of streamUrls) await openAndAbort(u, false);
  await settle(() => agentChildren().length === 0);
  const before = openFds(agent.pid);
  t.comment(`before: ${before.count} open fds, children ${JSON.stringify(agentChildren())}`);

  const jobs = Array.from({ length: TOTAL }, (_, i) => ({ url: streamUrls[i % streamUrls.length]!, sse: i % 5 === 4 }));
  const statuses = new Map<string, number>();
  let withData = 0;
  let peakChildren = 0;
  const started = performance.now();
  await mapLimit(jobs, CONCURRENCY, async (j, i) => {
    const r = await openAndAbort(j.url, j.sse);
    const key = `${j.url.split('?')[0]} ${r.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    if (r.firstBytes > 0) withData++;
    if (i % 50 === 0) peakChildren = Math.max(peakChildren, agentChildren().length);
  });
  t.comment(`${TOTAL} streams in ${Math.round(performance.now() - started)} ms: ${[...statuses].map(([k, n]) => `${k}×${n}`).join(', ')}; ${withData} sent data before the abort; up to ${peakChildren} children seen while running`);
  for (const [k] of statuses) t.match(k, / 200$/, `${k}: every stream opened`);

  const noChildren = await settle(() => agentChildren().length === 0);
  t.ok(noChildren, `no child process left: ${JSON.stringify(agentChildren())}`);
  const fdsBack = await settle(() => openFds(agent.pid).count <= before.count);
  const after = openFds(agent.pid);
  t.ok(fdsBack, `open fds back to ${before.count} (now ${after.count})`);
  if (!fdsBack) t.comment(`new fds: ${after.targets.filter((x) => !before.targets.includes(x)).join(' ')}`);

  // the agent still answers, and streams still open (every follow slot was given back)
  t.equal((await fetch(`${agent.url}/healthz`)).status, 200);
  const again = await openAndAbort(streamUrls[0]!, false);
  t.equal(again.status, 200, 'a new stream opens after all that');
});
