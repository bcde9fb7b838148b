/**
 * Timeline benchmark: GET /v1/timeline?since=1h's work (readTimeline, in this process) on the
 * FAKE 1,000-container node (its FAKE CRI in a process of its own) with a generated journal of
 * N records in the last hour (every third kubelet, 1 in 97 of those an E line; every third
 * containerd; the rest cron), beside journalctl reading the same units and window.
 * Run: npx tsx bench/timeline.ts [records] [runs]
 */
import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import path from 'node:path';
import { createLogger } from '../src/agent.js';
import { loadConfig } from '../src/config.js';
import { deadlines } from '../src/deadlines.js';
import { closeSources, createSources } from '../src/sources.js';
import { readTimeline } from '../src/view/timeline/index.js';
import { TIMELINE_UNITS, JOURNAL_SCAN } from '../src/view/timeline/journal.js';
import { exportEntry, MACHINE_ID, writeJournal } from '../test/fixtures/journal/gen.js';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { startFakeCriProcess } from '../test/helpers/agent-process.js';
import { machine } from './lib.js';

const n = Number(process.argv[2] ?? 1_000_000);
const runs = Number(process.argv[3] ?? 5);
const BOOT = '13aee3a87a774e2d9686f3c19d408b06';
const host = await makeFakeScaleHost({ pods: 250, perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);
try {
  let t0 = performance.now();
  const start = Date.now() * 1000 - 3_590_000_000;
  const step = Math.floor(3_580_000_000 / n);
  function* records() {
    for (let i = 0; i < n; i++) {
      const us = start + i * step;
      const base: Array<[string, string]> = [['__REALTIME_TIMESTAMP', String(us)], ['__MONOTONIC_TIMESTAMP', String(1_000_000 + i * step)], ['_BOOT_ID', BOOT], ['_MACHINE_ID', MACHINE_ID], ['_PID', String(700 + (i % 3))], ['PRIORITY', '6']];
      const k = i % 3;
      if (k === 0) yield exportEntry([...base, ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'kubelet.service'], ['SYSLOG_IDENTIFIER', 'kubelet'], ['MESSAGE', `${i % 97 === 0 ? 'E' : 'I'}1202 08:00:00.000000     700 kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/web-${i % 500}" seq=${i}`]]);
      else if (k === 1) yield exportEntry([...base, ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'containerd.service'], ['SYSLOG_IDENTIFIER', 'containerd'], ['MESSAGE', `time="x" level=info msg="ImageStatus for \\"registry.k8s.io/pause:3.10\\" returns image status" seq=${i}`]]);
      else yield exportEntry([...base, ['_TRANSPORT', 'syslog'], ['_SYSTEMD_UNIT', 'cron.service'], ['SYSLOG_IDENTIFIER', 'CRON'], ['MESSAGE', `(root) CMD (run-parts /etc/cron.hourly) seq=${i}`]]);
    }
  }
  const all = records();
  const files = 8;
  const per = Math.ceil(n / files);
  for (let f = 0; f < files; f++) {
    const chunk = (function* () {
      for (let i = 0; i < per; i++) {
        const r = all.next();
        if (r.done) return;
        yield r.value;
      }
    })();
    await writeJournal(path.join(host.root, 'var/log/journal'), `system@${String(f).padStart(4, '0')}`, chunk);
  }
  console.log(`generated ${n} journal records in the last hour: ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const { config } = loadConfig(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg], {});
  const sources = createSources(config, createLogger({ logLevel: 'error' }, new Writable({ write: (_c, _e, cb) => cb() })));
  const ms: number[] = [];
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const rss0 = process.memoryUsage().rss;
  let last;
  for (let i = 0; i < runs; i++) {
    const now = Date.now() * 1000;
    t0 = performance.now();
    last = await readTimeline(sources, { sinceUs: now - 3600e6, untilUs: now, pods: null, sources: new Set(['kernel', 'oom', 'runtime', 'journal'] as const), limit: 500, verbose: false, nowUs: now }, { deadlines: deadlines(config) });
    ms.push(performance.now() - t0);
  }
  clearInterval(sampler);
  closeSources(sources);
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  console.log(`readTimeline since=1h: p50 ${med(ms).toFixed(0)} ms (runs ${ms.map((x) => x.toFixed(0)).join(', ')}); rss ${(rss0 / 2 ** 20).toFixed(0)} → peak ${(peak / 2 ** 20).toFixed(0)} MiB; events ${last!.events.length}, truncated ${last!.truncated}; sources ${JSON.stringify(last!.sources)}; warnings ${JSON.stringify(last!.warnings)}`);

  const since = `@${Math.floor(Date.now() / 1000) - 3600}`;
  const units = TIMELINE_UNITS.flatMap((u) => ['-u', u]);
  for (const [what, extra] of [[`-n ${JOURNAL_SCAN} (what the timeline reads)`, `-n ${JOURNAL_SCAN}`], ['the whole window', '']] as const) {
    const res = execFileSync('sh', ['-c', `{ /usr/bin/time -f '%e s, max RSS %M KiB' journalctl --root=${host.root} --no-pager ${units.join(' ')} --since=${since} -o export ${extra} > /dev/null; } 2>&1`], { encoding: 'utf8' });
    console.log(`journalctl same units, since 1h, ${what}: ${res.trim().split('\n').at(-1)}`);
  }
  console.log(JSON.stringify(machine()));
} finally {
  await cri.stop();
  host.cleanup();
}
