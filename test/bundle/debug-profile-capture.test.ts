/**
 * A capture under the debug pod's own V8 and malloc settings (read from
 * deploy/debug-profile.yaml, as kubelet would pass them), on a FAKE node whose kernel
 * ring is large (10 MB of records, log_buf_len=16M): the agent ran out of its 96 MiB old
 * space building two whole-ring /v1/kernel answers at once and died with SIGABRT. Now a
 * kernel answer keeps the newest records within limitBytes and concurrent readers share
 * one read of the ring: the capture completes and the agent stays up.
 *
 * No figure is asserted: the agent either survives the capture or it does not.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { KERNEL_LIMITS } from '../../src/view/kernel-log.js';
import { appendLargeKmsg, makeFakeScaleHost } from '../fixtures/fake-node.js';
import { REPO, serveFakeNode } from '../helpers/agent-process.js';

t.setTimeout(300_000);

const profile = parseYaml(readFileSync(path.join(REPO, 'deploy/debug-profile.yaml'), 'utf8')) as { env?: { name: string; value?: string }[] };
const env = Object.fromEntries((profile.env ?? []).filter((e) => e.name === 'NODE_OPTIONS' || e.name === 'MALLOC_MMAP_THRESHOLD_').map((e) => [e.name, e.value ?? '']));

const host = await makeFakeScaleHost({ pods: 4, perPod: 2 });
appendLargeKmsg(host);
// The product as shipped: dist/ (built by npm ci's prepare; tsx's transpiler would spend the
// same heap), with exactly the profile's NODE_OPTIONS (not tap's coverage hooks, which keep
// the source map of every module loaded: ~30 MiB of this heap).
const { NODE_OPTIONS: nodeOptions, ...otherEnv } = env;
const { agent } = await serveFakeNode(t, host, ['--kubelet-healthz', 'http://127.0.0.1:1/healthz'], { env: otherEnv, nodeOptions: nodeOptions ?? '', dist: true });
const alive = () => agent.child.exitCode === null && agent.child.signalCode === null;

t.test('the profile gives the agent a bounded heap (what this test is about)', async (t) => {
  t.match(env.NODE_OPTIONS, /--max-old-space-size=\d+/);
});

t.test('/v1/kernel keeps the newest records within limitBytes and says so; a bad limitBytes is a 400', async (t) => {
  const r = await fetch(`${agent.url}/v1/kernel`);
  t.equal(r.status, 200);
  const b = (await r.json()) as { records: { text: string; seq: number }[]; truncated: string | null; warnings: string[] };
  t.equal(b.truncated, 'bytes');
  t.match(b.warnings.join('\n'), /oldest \d+ records left out to keep the answer within 2097152 bytes/);
  const text = b.records.reduce((n, x) => n + Buffer.byteLength(x.text), 0);
  t.ok(text <= KERNEL_LIMITS.defaultLimitBytes && text > KERNEL_LIMITS.defaultLimitBytes - 4096, `the text answered fills the limit (${text} bytes)`);
  t.match(b.records.at(-1)?.text, /eth0: rx error frame/, 'the newest records are the ones kept');
  const small = (await (await fetch(`${agent.url}/v1/kernel?limitBytes=1000`)).json()) as { records: unknown[] };
  t.ok(small.records.length > 0 && small.records.length < 20, `limitBytes narrows it (${small.records.length} records)`);
  for (const bad of ['0', String(KERNEL_LIMITS.maxLimitBytes + 1)]) {
    const x = await fetch(`${agent.url}/v1/kernel?limitBytes=${bad}`);
    t.equal(x.status, 400, `limitBytes=${bad}`);
    t.match(await x.text(), /limitBytes: must be an integer between 1 and/);
  }
});

t.test('a whole capture completes and the agent stays up', async (t) => {
  const r = await fetch(`${agent.url}/v1/bundle`, { signal: AbortSignal.timeout(240_000) });
  t.equal(r.status, 200);
  // a body cut short: say why (the agent's stderr holds V8's "heap out of memory" when it died)
  const gz = Buffer.from(
    await r.arrayBuffer().catch(async (e: Error) => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      throw new Error(`${e.message}; agent alive: ${alive()}; stderr: ${agent.stderr.join('').slice(0, 400)}`);
    }),
  );
  t.ok(gunzipSync(gz).length > 0, 'a complete gzip stream');
  t.ok(alive(), `the agent is alive (${agent.stderr.join('').slice(0, 400)})`);
  t.equal((await fetch(`${agent.url}/healthz`)).status, 200);
});
