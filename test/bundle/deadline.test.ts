/**
 * A capture has an overall deadline (--capture-timeout, here through its environment twin):
 * on a node whose runtime answers slowly (the FAKE CRI delaying every call, within
 * --cri-timeout) the capture outlasts it; GET /v1/bundle over real HTTP then still ends
 * with a complete archive whose manifest says it is incomplete and why, and every section
 * not finished by then is marked. The capture slot is back afterwards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { readBundle } from '../../src/bundle/read.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const host = await makeFakeScaleHost({ pods: 3, perPod: 2 });
const cri = new FakeCriServer(host.node);
await cri.start();
cri.delayMs = 700; // under --cri-timeout: every call answers, slowly, so the capture takes many seconds
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-deadline-'));
const a = await testApp(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--cri-timeout', '5s', '--kubelet-healthz', 'http://127.0.0.1:1/healthz'], {
  NODETRUTH_CAPTURE_TIMEOUT: '1s',
});
await a.app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(a.app.server.address() as AddressInfo).port}`;
t.teardown(async () => {
  await a.close();
  await cri.stop();
  host.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

t.test('past --capture-timeout the bundle ends with what it has, and its manifest says so', async (t) => {
  const res = await fetch(`${url}/v1/bundle`, { signal: AbortSignal.timeout(120_000) }); // hang guard
  t.equal(res.status, 200);
  const file = path.join(dir, 'deadline.tar.gz');
  writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  const b = await readBundle(file); // a complete archive: it reads, manifest and all
  t.match(b.manifest.incomplete, { reason: 'deadline', detail: /--capture-timeout 1s/ }, 'the manifest says the deadline passed');
  const unfinished = b.manifest.sections.filter((s) => /--capture-timeout/.test(s.error ?? ''));
  t.ok(unfinished.length > 0, `sections not finished by the deadline are marked: ${unfinished.map((s) => s.name).slice(0, 5).join(', ')}`);
  for (const s of b.manifest.sections.filter((x) => x.path !== undefined)) t.ok(b.entries.has(s.path!), `${s.path} is in the archive`);
  // the slot is back: the next capture is admitted
  const next = await fetch(`${url}/v1/bundle`, { signal: AbortSignal.timeout(120_000) });
  await next.arrayBuffer();
  t.equal(next.status, 200, 'the next capture is taken');
});
