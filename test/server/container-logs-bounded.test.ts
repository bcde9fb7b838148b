/**
 * /v1/containers/{id}/logs over real HTTP on a 64 MiB CRI log file with a
 * rotated plain and a rotated gzipped file: tails of
 * 10, 100 and 100,000 logical lines, sinceTime in the middle, stream filter,
 * previous, and the answer's byte bound said in the answer. No runtime: the
 * container is found through /var/log/containers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { criTime, LOG_CONTAINER_ID, writeBigPodLogs } from '../fixtures/podlogs.js';

const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-logs-bounded-'));
const big = writeBigPodLogs(root);
const agent = await testApp(['--host-root', root]);
await agent.app.listen({ port: 0, host: '127.0.0.1' });
const addr = agent.app.server.address();
const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
t.teardown(async () => {
  await agent.close();
  rmSync(root, { recursive: true, force: true });
});

interface Body {
  entries: Array<{ time: string; stream: string; message: string; cut?: boolean }>;
  files: string[];
  truncated: boolean;
  truncatedBy: string | null;
  warnings: string[];
  attempt: number;
}
const get = async (qs: string): Promise<{ status: number; body: Body }> => {
  const res = await fetch(`${base}/v1/containers/${LOG_CONTAINER_ID.slice(0, 12)}/logs?${qs}`);
  return { status: res.status, body: (await res.json()) as Body };
};
const idx = (m: string) => Number(/^line (\d+) /.exec(m)?.[1]);
const consecutive = (xs: number[]) => xs.every((x, i) => i === 0 || x === xs[i - 1]! + 1);

for (const n of [10, 100]) {
  t.test(`tailLines=${n} of a 64 MiB file: the last ${n} logical lines, the live file only`, async (t) => {
    const { status, body } = await get(`tailLines=${n}`);
    t.equal(status, 200);
    const xs = body.entries.map((e) => idx(e.message));
    t.equal(xs.length, n);
    t.equal(xs.at(-1), big.live.last);
    t.ok(consecutive(xs));
    t.equal(body.truncated, false);
    t.same(body.files.map((f) => path.posix.basename(f)), ['1.log']);
  });
}

t.test('tailLines=100000: the newest lines that fit the 16 MiB default bound, said so; P runs joined across chunks', async (t) => {
  const { status, body } = await get('tailLines=100000');
  t.equal(status, 200);
  const xs = body.entries.map((e) => idx(e.message));
  t.equal(xs.at(-1), big.live.last);
  t.ok(consecutive(xs));
  t.equal(body.truncatedBy, 'limitBytes');
  const bytes = body.entries.reduce((n, e) => n + Buffer.byteLength(e.message) + 1, 0);
  t.ok(bytes <= 16 * 1024 * 1024);
  const runs = body.entries.filter((e) => e.message.length > 90_000);
  t.ok(runs.length > 10);
  t.ok(runs.every((e) => /^line \d+ p{30000}p{30000}p{30000}$/.test(e.message)), 'three 30,000-byte parts make one line');
});

t.test('sinceTime in the middle of the live file, stream filter, previous', async (t) => {
  const mid = Math.floor((big.live.first + big.live.last) / 2);
  const since = criTime(Date.UTC(2026, 10, 30, 10, 0, 0) + mid);
  const { status, body } = await get(`sinceTime=${since}&limitBytes=100000000`);
  t.equal(status, 200, JSON.stringify(body).slice(0, 300));
  const xs = body.entries.map((e) => idx(e.message));
  t.equal(xs[0], mid);
  t.equal(xs.at(-1), big.live.last);
  t.ok(consecutive(xs));
  t.equal(body.truncated, false);
  const bounded = await get(`sinceTime=${since}`);
  t.equal(bounded.body.truncatedBy, 'limitBytes', 'half of 64 MiB is more than the default bound');
  t.equal(idx(bounded.body.entries.at(-1)!.message), big.live.last, 'the newest lines are kept');
  const err = await get('tailLines=100&stream=stderr');
  t.equal(err.body.entries.length, 100);
  t.ok(err.body.entries.every((e) => e.stream === 'stderr' && idx(e.message) % 7 === 3));
  const prev = await get('previous=true');
  t.same(prev.body.entries.map((e) => e.message), ['attempt 0 started', 'attempt 0 dying']);
  t.equal(prev.body.attempt, 0);
  const text = await fetch(`${base}/v1/containers/${LOG_CONTAINER_ID}/logs?tailLines=2&format=text`);
  t.equal((await text.text()).split('\n').length, 3);
});

t.test('ten tails of the 64 MiB file at once all answer, and healthz meanwhile', async (t) => {
  const all = await Promise.all([...Array.from({ length: 10 }, () => get('tailLines=100')), fetch(`${base}/healthz`).then((r) => ({ status: r.status, body: null }))]);
  t.ok(all.every((r) => r.status === 200));
  t.ok(all.slice(0, 10).every((r) => r.body!.entries.length === 100));
});
