/**
 * GET /v1/bundle against clients that go away or stop reading, through the agent as a
 * real process on a FAKE node whose kernel log is 10 MB (so the capture writes large
 * entries, the kmsg section and the /v1/kernel answers, while the client is there):
 *
 *  - a client that closes its socket mid-capture, at three points of the stream: the
 *    agent stays up, logs no error that escaped its handlers, answers /healthz, and the
 *    next capture is taken (the capture slot came back);
 *  - a client that never reads (a paused socket): once it holds bytes it does not take
 *    for --drain-timeout the agent closes it, what it got is not a complete archive, and
 *    the next capture is not 429.
 *
 * --drain-timeout is given through its environment twin (NODETRUTH_DRAIN_TIMEOUT).
 * No duration is asserted: waits are hang guards.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { appendLargeKmsg, makeFakeScaleHost } from '../fixtures/fake-node.js';
import { serveFakeNode } from '../helpers/agent-process.js';

t.setTimeout(600_000);
/** hang guard for anything awaited below */
const HANG_MS = 120_000;

const host = await makeFakeScaleHost({ pods: 4, perPod: 2 });
// 10 MB of kernel records, half of each random hex: gzip cannot shrink the bundle below the
// kernel's socket buffers, so a client that stops reading really holds the capture
appendLargeKmsg(host);
const { agent } = await serveFakeNode(t, host, ['--kubelet-healthz', 'http://127.0.0.1:1/healthz'], {
  env: { NODETRUTH_DRAIN_TIMEOUT: '2s' },
});

const alive = () => agent.child.exitCode === null && agent.child.signalCode === null;
/** log lines of errors that escaped their handlers (the guard's), or a crash's stack on stderr */
const escaped = () => [...agent.lines.filter((l) => /uncaughtException|unhandledRejection/.test(l)), ...agent.stderr.filter((l) => /ERR_STREAM|Emitted 'error'|at .*pack\.js/.test(l))];

/** GET /v1/bundle; the socket is destroyed once `cutAfter` bytes of the body arrived. */
function cutBundle(cutAfter: number): Promise<{ status: number; got: number; error: string }> {
  return new Promise((resolve) => {
    let got = 0;
    let status = 0;
    const guard = setTimeout(() => finish('hang guard'), HANG_MS);
    const finish = (error: string) => {
      clearTimeout(guard);
      req.destroy();
      resolve({ status, got, error });
    };
    const req = httpRequest(`${agent.url}/v1/bundle`, { agent: false }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (d: Buffer) => {
        got += d.length;
        if (got >= cutAfter) finish('');
      });
      res.on('end', () => finish('ended before the cut'));
      res.on('error', () => {});
    });
    req.on('error', (err) => finish(err.message));
    req.end();
  });
}

/** Ask for a capture until one is admitted (not 429): its status; the body is read to its end. */
async function nextCapture(): Promise<{ status: number; bytes: number; tries: number }> {
  const until = Date.now() + HANG_MS;
  for (let tries = 1; ; tries++) {
    const res = await fetch(`${agent.url}/v1/bundle`);
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 429 || Date.now() > until) return { status: res.status, bytes: body.length, tries };
    await new Promise((r) => setTimeout(r, 250));
  }
}

t.test('a client that closes its socket mid-entry does not end the agent', async (t) => {
  for (const cutAfter of [64 * 1024, 400 * 1024, 1200 * 1024]) {
    const r = await cutBundle(cutAfter);
    t.equal(r.status, 200, `the capture started (cut after ${r.got} bytes${r.error ? `: ${r.error}` : ''})`);
    t.equal(r.error, '', 'cut while the capture was still writing');
    // the capture notices the cut on its next write; give it a moment, then look
    await new Promise((res) => setTimeout(res, 500));
    t.ok(alive(), `the agent is still running after a cut at ${r.got} bytes: ${agent.stderr.slice(-8).join('\n')}`);
    if (!alive()) return;
    t.equal((await fetch(`${agent.url}/healthz`)).status, 200, '/healthz answers');
  }
  t.same(escaped(), [], 'no error escaped its handler');
  const next = await nextCapture();
  t.equal(next.status, 200, `the next capture is taken (after ${next.tries} tries): the slot came back`);
});

t.test('a client that never reads holds the capture only until --drain-timeout', async (t) => {
  if (!alive()) {
    t.fail('the agent did not survive the test before; nothing left to test here');
    return;
  }
  // a raw socket that sends its request and never reads: the kernel's buffers fill, then the agent's
  const s = connect(Number(new URL(agent.url).port), '127.0.0.1');
  s.pause();
  const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
  s.on('error', () => {});
  s.write(`GET /v1/bundle HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  // while it stalls, other captures are refused (one at a time), until the agent cuts it
  const next = await nextCapture();
  t.not(next.status, 429, `a capture is taken again after ${next.tries} tries: the stalled one was cut`);
  t.equal(next.status, 200);
  // what the stalled client got, read now: the agent's side is closed, so it ends; not a complete archive
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  s.resume();
  const guard = setTimeout(() => s.destroy(), HANG_MS);
  await closed;
  clearTimeout(guard);
  const raw = Buffer.concat(chunks);
  const head = raw.indexOf('\r\n\r\n');
  t.match(raw.subarray(0, head).toString('latin1'), /^HTTP\/1\.1 200/, 'the stalled client had been answered 200');
  const body = raw.subarray(head + 4);
  t.ok(body.length > 0, `it got ${body.length} bytes of the answer before the cut`);
  t.throws(() => gunzipSync(dechunk(body)), 'what it got is not a complete archive');
  t.ok(alive(), 'the agent is still running');
  t.same(escaped(), [], 'no error escaped its handler');
  const metrics = await (await fetch(`${agent.url}/metrics`)).text();
  t.match(metrics, /nodetruth_stalled_clients_total\{action="cut"\} [1-9]/, 'the cut is counted');
});

/** The body of a chunked answer (as far as it goes). */
function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  while (i < b.length) {
    const eol = b.indexOf('\r\n', i);
    if (eol < 0) break;
    const n = parseInt(b.subarray(i, eol).toString('latin1'), 16);
    if (!Number.isFinite(n) || n === 0) break;
    out.push(b.subarray(eol + 2, Math.min(b.length, eol + 2 + n)));
    i = eol + 2 + n + 2;
  }
  return Buffer.concat(out);
}
