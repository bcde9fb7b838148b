/**
 * Capture of the FAKE 1,000-container node (250 pods × 4, bench/lib.ts; not a real
 * node) into a bundle: capture time, bundle size (gzip'd and uncompressed), peak
 * RSS and the heap before/after. The FAKE runtime runs in its own process; the
 * capture (real app, app.inject, tar-stream → gzip → file) runs in this one, so
 * its memory is what is measured. Streaming check: the heap after a full GC
 * before and after the capture, and the peak heap during it, against the size of
 * the bundle (a capture that held the bundle would need at least its size).
 *
 *   node --expose-gc --import tsx bench/bundle.ts [pods] [perPod] [budget MiB, default 64]
 */
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { createLogger } from '../src/agent.js';
import { closeSources, createSources } from '../src/sources.js';
import { captureBundle } from '../src/bundle/capture.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/server/app.js';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { startFakeCriProcess } from '../test/helpers/agent-process.js';
import { mib, report, round } from './lib.js';

const pods = Number(process.argv[2] ?? 250);
const perPod = Number(process.argv[3] ?? 4);
const budgetMiB = Number(process.argv[4] ?? 64);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const host = await makeFakeScaleHost({ pods, perPod, journal: true, logLines: 50 });
const cri = await startFakeCriProcess(host.options);
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bench-bundle-'));
try {
  const { config } = loadConfig(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'fake-node'], {});
  const shutdown = new AbortController();
  const deps = createSources(config, createLogger({ logLevel: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() })));
  const app = await buildApp(deps, { shutdown: shutdown.signal, tls: null });
  await app.ready();
  await app.inject({ url: '/v1/containers', headers: { host: '127.0.0.1' } }); // warm the CRI connection
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  let peakHeap = heapBefore;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 20);
  const file = path.join(dir, 'bench.tar.gz');
  // the longest the capture held the event loop (DESIGN.md: no piece of work > 100 ms): the
  // histogram is wall time, which on a loaded machine includes the time this process waited for a
  // core; so a 10 ms tick also takes this thread's own CPU time between ticks (threadCpuUsage: not
  // the zlib and fs threads), which is what the capture's own work held the loop for
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let lastWall = performance.now();
  let lastCpu = process.threadCpuUsage();
  let maxGapMs = 0;
  let maxCpuInGapMs = 0;
  let gapsOver100 = 0;
  const ticker = setInterval(() => {
    const wall = performance.now();
    const cpu = process.threadCpuUsage();
    const gap = wall - lastWall;
    const cpuMs = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    maxGapMs = Math.max(maxGapMs, gap);
    maxCpuInGapMs = Math.max(maxCpuInGapMs, cpuMs);
    if (cpuMs > 100) gapsOver100++;
    lastWall = wall;
    lastCpu = cpu;
  }, 10);
  const t0 = performance.now();
  const m = await captureBundle({ app, deps, sinceMs: 7 * 86_400_000, maxBytes: budgetMiB * 2 ** 20 }, createWriteStream(file));
  const ms = performance.now() - t0;
  loop.disable();
  clearInterval(ticker);
  clearInterval(sampler);
  gc();
  const heapAfter = process.memoryUsage().heapUsed;
  const routes = m.sections.filter((s) => s.kind === 'route');
  const byKind = Object.fromEntries(['route', 'cri', 'kmsg', 'cgroup', 'journal', 'podlog'].map((k) => [k, mib(m.sections.filter((s) => s.kind === k).reduce((n, s) => n + s.bytes, 0))]));
  report('bundle', `node --expose-gc --import tsx bench/bundle.ts ${pods} ${perPod} ${budgetMiB}`, {
    node: `FAKE ${pods} pods x ${perPod} containers (${host.node.containers.length} containers)`,
    captureSeconds: round(ms / 1000, 1),
    routeAnswers: routes.length,
    sections: m.sections.length,
    failedSections: m.sections.filter((s) => s.error !== undefined).length,
    budgetMiB,
    trimmed: m.trimmed,
    bundleMiB: mib(statSync(file).size),
    uncompressedMiB: mib(m.bytes),
    mibByKind: byKind,
    redactions: m.redaction.total,
    eventLoopDelayMaxMs: round(loop.max / 1e6, 1),
    eventLoopDelayP99Ms: round(loop.percentile(99) / 1e6, 1),
    longestTickGapMs: round(maxGapMs, 1),
    mostMainThreadCpuBetweenTicksMs: round(maxCpuInGapMs, 1),
    ticksWithOver100msMainThreadCpu: gapsOver100,
    rssBeforeMiB: mib(rssBefore),
    peakRssMiB: mib(peakRss),
    heapBeforeMiB: mib(heapBefore),
    peakHeapMiB: mib(peakHeap),
    heapAfterGcMiB: mib(heapAfter),
  });
  shutdown.abort();
  await app.close();
  closeSources(deps);
} finally {
  await cri.stop();
  host.cleanup();
  rmSync(dir, { recursive: true, force: true });
}
