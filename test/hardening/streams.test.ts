/**
 * Follow streams opened and aborted 1,000 times in total (journal, kernel log,
 * container logs: whichever /openapi.json lists with a `follow` parameter),
 * against the agent as a real process on a FAKE node, from one client at 8 at once:
 * over the per-client cap (--max-follows-per-client 4), so the churn mixes streams
 * that ran with streams refused 429, and some requests are aborted before any
 * answer. Afterwards the agent has no child process left (journalctl children are
 * reaped), no more open file descriptors than before (kmsg and CRI log files are
 * closed), and every slot is back. The caps themselves: the 5th stream of one
 * client and the stream past --max-follows answer 429 problem+json with Retry-After.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { mapLimit } from '../../src/lib/concurrency.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { childrenOf, openFds, serveFakeNode } from '../helpers/agent-process.js';

const TOTAL = Number(process.env.NODETRUTH_STREAMS ?? 1000);
const CONCURRENCY = 8;
const PER_CLIENT = 4;
const MAX_FOLLOWS = 6;
/** A hang guard, not a time budget: an answer's headers on a loaded machine can take seconds. */
const ANSWER_MS = 60_000;

const host = await makeFakeScaleHost({ pods: 10, perPod: 2, journal: true, logLines: 20 });
const { agent } = await serveFakeNode(t, host, ['--max-follows', String(MAX_FOLLOWS), '--max-follows-per-client', String(PER_CLIENT), '--follow-max', '1h']);

const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as { paths: Record<string, { get?: { parameters?: { name: string }[] } }> };
const running = host.node.containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
const streamUrls = Object.entries(doc.paths)
  .filter(([, ops]) => ops.get?.parameters?.some((p) => p.name === 'follow'))
  .map(([p]) => {
    const base = p.replace('{id}', running.id);
    return p === '/v1/logs' ? `${base}?query=kubelet&follow=true` : `${base}?follow=true`;
  });

interface Opened {
  /** 0: aborted before an answer (on purpose, `early`) */
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  firstBytes: number;
  error: string;
}

/**
 * Open a follow stream and abort it. `early`: as soon as the request is sent, before any
 * answer (the client gone while the agent starts the stream). Otherwise: wait for the answer's
 * headers (ANSWER_MS at most: a hang), then for its first bytes or 200 ms, then abort.
 * `localAddress` is the client's address (127.0.0.x: another client of the per-client cap).
 */
function openAndAbort(path: string, o: { sse?: boolean; early?: boolean; localAddress?: string } = {}): Promise<Opened> {
  return new Promise((resolve) => {
    const r: Opened = { status: 0, retryAfter: undefined, contentType: undefined, firstBytes: 0, error: '' };
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const req = httpRequest(`${agent.url}${path}`, { agent: false, localAddress: o.localAddress, headers: o.sse ? { accept: 'text/event-stream' } : {} }, (res) => {
      r.status = res.statusCode ?? 0;
      r.retryAfter = res.headers['retry-after'];
      r.contentType = res.headers['content-type'];
      clearTimeout(timer);
      timer = setTimeout(finish, 200);
      res.on('data', (c: Buffer) => {
        r.firstBytes += c.length;
        finish();
      });
      res.on('error', finish);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!done) r.error = `${err.code ?? ''} ${err.message}`;
      finish();
    });
    if (o.early) req.end(() => setImmediate(finish));
    else {
      timer = setTimeout(() => {
        r.error = `no answer within ${ANSWER_MS} ms`;
        finish();
      }, ANSWER_MS);
      req.end();
    }
  });
}

/** Open a stream and keep it open until `close()`: its status once the headers are in. */
function hold(path: string, localAddress?: string): Promise<{ status: number; retryAfter: string | undefined; body: () => Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${agent.url}${path}`, { agent: false, localAddress }, (res) => {
      let body = '';
      const ended = new Promise<string>((r) => res.on('end', () => r(body)).on('close', () => r(body)));
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
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
  for (const u of streamUrls) t.equal((await openAndAbort(u)).status, 200, `warm-up ${u.split('?')[0]}`);
  await settle(() => agentChildren().length === 0);
  const before = openFds(agent.pid);
  t.comment(`before: ${before.count} open fds, children ${JSON.stringify(agentChildren())}`);

  // one in 7 aborted before any answer; one in 5 asks for SSE
  const jobs = Array.from({ length: TOTAL }, (_, i) => ({ url: streamUrls[i % streamUrls.length]!, sse: i % 5 === 4, early: i % 7 === 3 }));
  const statuses = new Map<string, number>();
  const wrong: string[] = [];
  let withData = 0;
  let peakChildren = 0;
  const started = performance.now();
  await mapLimit(jobs, CONCURRENCY, async (j, i) => {
    const r = await openAndAbort(j.url, j);
    const route = j.url.split('?')[0]!;
    const key = `${route} ${j.early ? 'aborted before an answer' : r.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    if (r.firstBytes > 0) withData++;
    if (i % 50 === 0) peakChildren = Math.max(peakChildren, agentChildren().length);
    // every answer a client waited for: a stream, or the per-client cap's 429 (8 at once > 4)
    if (!j.early) {
      if (r.status === 429 && !(r.retryAfter && /^\d+$/.test(r.retryAfter) && r.contentType?.startsWith('application/problem+json'))) wrong.push(`${route}: 429 without Retry-After or problem+json (${r.retryAfter}, ${r.contentType})`);
      else if (r.status !== 200 && r.status !== 429) wrong.push(`${route}: status ${r.status} ${r.error}`);
    }
  });
  t.comment(`${TOTAL} streams in ${Math.round(performance.now() - started)} ms: ${[...statuses].sort().map(([k, n]) => `${k}×${n}`).join(', ')}; ${withData} sent data before the abort; up to ${peakChildren} children seen while running`);
  t.same(wrong.slice(0, 20), [], 'every answer is a stream (200) or the cap (429 problem+json with Retry-After)');
  for (const u of streamUrls) t.ok((statuses.get(`${u.split('?')[0]} 200`) ?? 0) > 0, `${u.split('?')[0]}: streams ran`);

  const noChildren = await settle(() => agentChildren().length === 0);
  t.ok(noChildren, `no child process left: ${JSON.stringify(agentChildren())}`);
  const fdsBack = await settle(() => openFds(agent.pid).count <= before.count);
  const after = openFds(agent.pid);
  t.ok(fdsBack, `open fds back to ${before.count} (now ${after.count})`);
  if (!fdsBack) t.comment(`new fds: ${after.targets.filter((x) => !before.targets.includes(x)).join(' ')}`);

  // the agent still answers, and streams still open (every follow slot was given back)
  t.equal((await fetch(`${agent.url}/healthz`)).status, 200);
  const back = await Promise.all(Array.from({ length: PER_CLIENT }, () => hold(streamUrls[0]!)));
  t.same(back.map((b) => b.status), Array(PER_CLIENT).fill(200), `${PER_CLIENT} new streams of one client open after all that: every slot was given back`);
  for (const b of back) b.close();
});

t.test('the caps answer 429 problem+json with Retry-After, and give the slot back when a stream ends', async (t) => {
  // every slot of the churn above is back (it checked); now fill one client's share
  const url = streamUrls.find((u) => u.startsWith('/v1/kernel')) ?? streamUrls[0]!;
  const mine: Awaited<ReturnType<typeof hold>>[] = [];
  for (let i = 0; i < PER_CLIENT; i++) mine.push(await hold(url));
  t.teardown(() => mine.forEach((s) => s.close()));
  t.same(mine.map((s) => s.status), Array(PER_CLIENT).fill(200), `${PER_CLIENT} streams of 127.0.0.1 open`);
  const over = await hold(url);
  t.equal(over.status, 429, `the ${PER_CLIENT + 1}th stream of one client is refused`);
  t.match(over.retryAfter, /^\d+$/, 'with Retry-After');
  t.match(JSON.parse(await over.body()), { status: 429, detail: /--max-follows-per-client/ });
  // another client (another loopback address) has its own share, up to the global cap
  const other: Awaited<ReturnType<typeof hold>>[] = [];
  for (let i = 0; i < MAX_FOLLOWS - PER_CLIENT; i++) other.push(await hold(url, '127.0.0.2'));
  t.teardown(() => other.forEach((s) => s.close()));
  t.same(other.map((s) => s.status), Array(MAX_FOLLOWS - PER_CLIENT).fill(200), 'another client opens its streams');
  const full = await hold(url, '127.0.0.3');
  t.equal(full.status, 429, `past --max-follows ${MAX_FOLLOWS} a third client is refused`);
  t.match(full.retryAfter, /^\d+$/, 'with Retry-After');
  t.match(JSON.parse(await full.body()), { status: 429, detail: /--max-follows\b/ });
  // one stream ends: its slot is given back once the agent sees the close
  mine.pop()!.close();
  let reopened = false;
  for (let i = 0; i < 200 && !reopened; i++) {
    const s = await hold(url);
    if (s.status === 200) {
      reopened = true;
      mine.push(s);
    } else {
      await s.body();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  t.ok(reopened, 'a closed stream gives its slot back');
});
