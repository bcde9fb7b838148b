/**
 * Writes examples/fake-node.tar.gz: a bundle captured from the FAKE node
 * (test/fixtures/fake-node.ts: generated files in a temp dir and a FAKE CRI
 * runtime, NOT a real node) at small scale: 6 pods, 12 containers, a small real
 * journal, a kernel log with an OOM kill. A real node's bundle is
 * examples/node-vm.tar.gz (examples/README.md). Run: npx tsx examples/make-fake-bundle.ts
 */
import { createWriteStream, existsSync, renameSync } from 'node:fs';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { closeDeps, createDeps, createLogger } from '../src/agent.js';
import { captureBundle } from '../src/bundle/capture.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/server/app.js';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { FakeCriServer } from '../test/helpers/fake-cri.js';

const out = fileURLToPath(new URL('./fake-node.tar.gz', import.meta.url));
const host = await makeFakeScaleHost({ pods: 6, perPod: 2, journal: true, logLines: 30, seed: 'example' });
const cri = new FakeCriServer(host.node);
await cri.start();
try {
  const { config } = loadConfig(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'fake-node'], {});
  const shutdown = new AbortController();
  const deps = createDeps(config, createLogger({ logLevel: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() })), shutdown.signal);
  const app = await buildApp(deps, { tls: null });
  await app.ready();
  const tmp = `${out}.tmp`;
  // the fake journal is dated in the past: take all of it
  const m = await captureBundle({ app, deps, sinceMs: 7 * 86_400_000, argv: ['nodetruth', 'capture', '(FAKE node: examples/make-fake-bundle.ts)'] }, createWriteStream(tmp));
  renameSync(tmp, out);
  process.stderr.write(`wrote ${out}: ${m.sections.length} sections, ${m.bytes} bytes uncompressed, ${m.redaction.total} redactions${existsSync(out) ? '' : ' (missing?)'}\n`);
  shutdown.abort();
  await app.close();
  closeDeps(deps);
} finally {
  await cri.stop();
  host.cleanup();
}
