/**
 * Bytes in flight are bounded per client: the agent as a real process on a FAKE node whose
 * kernel log is 10 MB, so GET /v1/kernel for the whole ring answers ~23 MB. One client address opens readers
 * that never read (paused sockets): each holds what the kernel's buffers cannot take. Once
 * that address holds more than IN_FLIGHT.perClient, its next request is refused 429
 * problem+json with Retry-After instead of one more answer held for it; /healthz still
 * answers it, and another address is not refused for it. When the stalled readers go away, the
 * address is served again. Readers of one answer of one reading hold one shared body: they
 * count it once, so any number of them is served.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { IN_FLIGHT } from '../../src/server/connections.js';
import { KERNEL_LIMITS } from '../../src/view/kernel-log.js';
import { appendLargeKmsg, makeFakeScaleHost } from '../fixtures/fake-node.js';
import { serveFakeNode } from '../helpers/agent-process.js';

t.setTimeout(600_000);
const host = await makeFakeScaleHost({ pods: 2, perPod: 1 });
appendLargeKmsg(host);
// a drain timeout far above the test's own span: only the in-flight bound acts here
// one reading for the whole file: distinct answers are distinct URLs, not later readings
const { agent } = await serveFakeNode(t, host, ['--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--max-age', '1m'], {
  env: { NODETRUTH_DRAIN_TIMEOUT: '10m' },
});
const port = Number(new URL(agent.url).port);

function get(path: string, localAddress: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A reader that sends its request and never reads; resolves once its answer's first bytes are in (the agent wrote it). */
function stalled(localAddress: string, path = KERNEL): Promise<{ s: Socket; head: string }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, localAddress });
    s.on('error', () => {});
    s.once('data', (d: Buffer) => {
      s.pause();
      s.unshift(d);
      resolve({ s, head: d.subarray(0, 12).toString('latin1') });
    });
    s.once('close', () => reject(new Error('closed before an answer')));
    s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  });
}

/** the whole ring: the largest answer the route gives (16 MiB of record text) */
const KERNEL = `/v1/kernel?limitBytes=${KERNEL_LIMITS.maxLimitBytes}`;
/** the n-th of distinct answers of about that size: each its own body */
const kernelAnswer = (n: number) => `/v1/kernel?limitBytes=${KERNEL_LIMITS.maxLimitBytes - n * 1024}`;

t.test('a client that holds too many unread bytes is refused 429 until it reads', async (t) => {
  const one = await get(KERNEL, '127.0.0.40');
  t.equal(one.status, 200);
  const size = Buffer.byteLength(one.body);
  t.ok(size > 8 * 2 ** 20, `/v1/kernel answers ${size} bytes`);
  const readers: Socket[] = [];
  t.teardown(() => readers.forEach((s) => s.destroy()));
  // enough stalled answers to pass the bound even if the kernel's buffers took 6 MB of each
  const need = Math.ceil(IN_FLIGHT.perClient / (size - 6 * 2 ** 20)) + 1;
  let refused: Awaited<ReturnType<typeof get>> | null = null;
  for (let i = 0; i < need + 2 && !refused; i++) {
    const r = await stalled('127.0.0.41', kernelAnswer(i + 1));
    readers.push(r.s);
    if (!r.head.startsWith('HTTP/1.1 200')) {
      refused = await get(KERNEL, '127.0.0.41');
      break;
    }
  }
  refused ??= await get(KERNEL, '127.0.0.41');
  t.equal(refused.status, 429, `after ${readers.length} stalled readers, the address is refused`);
  t.match(refused.headers['retry-after'], /^\d+$/, 'with Retry-After');
  t.match(JSON.parse(refused.body), { status: 429, code: 'client_unread_limit', detail: /not read/ });
  t.equal((await get('/healthz', '127.0.0.41')).status, 200, '/healthz still answers that address');
  // another address is not held to this one's bound (the total bound may still answer it 503)
  t.not((await get(KERNEL, '127.0.0.42')).status, 429, 'another address is not refused for this one');
  for (const s of readers.splice(0)) s.destroy();
  let back = 0;
  for (let i = 0; i < 100 && back !== 200; i++) {
    back = (await get(KERNEL, '127.0.0.41')).status;
    if (back !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(back, 200, 'once its readers are gone, the address is served again');
  const metrics = await (await fetch(`${agent.url}/metrics`)).text();
  t.match(metrics, /nodetruth_stalled_clients_total\{action="refused"\} [1-9]/, 'the refusals are counted');
});

t.test('readers of one shared answer hold one body: none is refused for the others', async (t) => {
  const readers: Socket[] = [];
  t.teardown(() => readers.forEach((s) => s.destroy()));
  // twice as many stalled readers as would pass the bound if each held its own copy
  const count = 2 * (Math.ceil(IN_FLIGHT.perClient / (10 * 2 ** 20)) + 1);
  for (let i = 0; i < count; i++) {
    const r = await stalled('127.0.0.43');
    readers.push(r.s);
    t.match(r.head, /^HTTP\/1\.1 200/, `stalled reader ${i + 1} of ${count} of the same answer is served`);
  }
  t.equal((await get(KERNEL, '127.0.0.43')).status, 200, 'and a reading client of that address too');
});
