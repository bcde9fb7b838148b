/**
 * Container log tails: a generated 64 MiB CRI log file
 * (with a rotated plain and a gzipped file beside it), the real app in this
 * process listening on loopback, and real HTTP requests:
 *   - `tailLines=100`, one at a time: time (p50, max)
 *   - ten `tailLines=100` at once: time of the batch
 * each with the process's RSS (max, sampled every 5 ms) and the event loop's
 * max delay (perf_hooks.monitorEventLoopDelay). Baselines in the same run:
 * `tail -n 100` of the same file, and a plain read of its last 64 KiB.
 * Run: npx tsx bench/podlogs.ts [rounds]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, promises as fsp, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { LOG_CONTAINER_ID, LOG_DIR, writeBigPodLogs } from '../test/fixtures/podlogs.js';
import { testApp } from '../test/helpers/app.js';
import { median, mib, report, round } from './lib.js';

const rounds = Number(process.argv[2] ?? 20);
const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-bench-podlogs-'));
try {
  const big = writeBigPodLogs(root);
  const file = path.join(root, LOG_DIR, '1.log');
  const agent = await testApp(['--host-root', root]);
  try {
    await agent.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = agent.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/v1/containers/${LOG_CONTAINER_ID.slice(0, 12)}/logs?tailLines=100`;
    const once = async () => {
      const res = await fetch(url);
      const body = (await res.json()) as { entries: unknown[] };
      if (res.status !== 200 || body.entries.length !== 100) throw new Error(`status ${res.status}, ${body.entries?.length} entries`);
    };
    // one phase: the figures while `fn` runs
    const phase = async (fn: () => Promise<void>) => {
      const eld = monitorEventLoopDelay({ resolution: 1 });
      let rssMax = process.memoryUsage().rss;
      const rssStart = rssMax;
      const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 5);
      eld.enable();
      const t0 = performance.now();
      await fn();
      const ms = performance.now() - t0;
      eld.disable();
      clearInterval(sampler);
      return { ms: round(ms), eventLoopMaxDelayMs: round(eld.max / 1e6), rssStartMiB: mib(rssStart), rssMaxMiB: mib(rssMax) };
    };
    await once(); // first-use loads are start-up cost
    await once();

    const seq: number[] = [];
    const single = await phase(async () => {
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now();
        await once();
        seq.push(performance.now() - t0);
      }
    });
    const batches: number[] = [];
    const concurrent = await phase(async () => {
      for (let i = 0; i < Math.max(3, Math.round(rounds / 4)); i++) {
        const t0 = performance.now();
        await Promise.all(Array.from({ length: 10 }, once));
        batches.push(performance.now() - t0);
      }
    });

    const tailN: number[] = [];
    const lastBytes: number[] = [];
    for (let i = 0; i < rounds; i++) {
      let t0 = performance.now();
      execFileSync('tail', ['-n', '100', file], { maxBuffer: 1 << 26 });
      tailN.push(performance.now() - t0);
      t0 = performance.now();
      const fh = await fsp.open(file);
      const st = await fh.stat();
      await fh.read(Buffer.allocUnsafe(65536), 0, 65536, st.size - 65536);
      await fh.close();
      lastBytes.push(performance.now() - t0);
    }
    report('podlogs', `npx tsx bench/podlogs.ts ${rounds}`, {
      file: { bytes: (await fsp.stat(file)).size, logicalLines: big.live.lines, rotated: ['1.log.20261130-100000 (4 MiB)', '1.log.20261130-095000.gz (2 MiB decompressed)'] },
      tailLines100: { p50Ms: round(median(seq)), maxMs: round(Math.max(...seq)), ...single },
      tenConcurrent: { batchP50Ms: round(median(batches)), batchMaxMs: round(Math.max(...batches)), ...concurrent },
      baseline: { tailN100P50Ms: round(median(tailN)), readLast64KiBP50Ms: round(median(lastBytes)) },
    });
  } finally {
    await agent.close();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
