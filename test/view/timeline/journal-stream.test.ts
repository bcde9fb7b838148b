/**
 * The timeline over a busy journal holds what its answer can use, not the records it reads:
 * real journal files (systemd-journal-remote) of 51,000 kubelet warnings in the last hour,
 * each a notable record with a 700-character message, read by readTimeline (what GET
 * /v1/timeline?source=journal runs; here with deadlines a loaded machine cannot miss) through
 * the agent's JournalSource: the newest JOURNAL_SCAN of them, every one an event, the newest
 * 500 kept. While the read runs, the heap after a full GC is sampled: it stays far below
 * what holding the records would take.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { JournalSource } from '../../../src/readers/journal/journalctl.js';
import { formatMicros } from '../../../src/readers/journal/time.js';
import { readTimeline, type TimelineDeps } from '../../../src/view/timeline/index.js';
import { JOURNAL_SCAN } from '../../../src/view/timeline/journal.js';
import type { TimelineQuery } from '../../../src/view/timeline/window.js';
import { JOURNAL_REMOTE, kubeletAt, writeJournal } from '../../fixtures/journal/gen.js';

if (!existsSync(JOURNAL_REMOTE)) {
  t.plan(0, `${JOURNAL_REMOTE} is not installed: no real journal can be written (apt-get install systemd-journal-remote)`);
} else {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const usedAfterGc = (): number => {
    gc();
    return getHeapStatistics().used_heap_size;
  };

  const RECORDS = 51_000;
  const MESSAGE_CHARS = 700;
  const nowUs = Date.now() * 1000;
  /** the records' times: over the 50 minutes before now, oldest first */
  const first = nowUs - 50 * 60_000_000;
  const step = Math.floor((50 * 60_000_000) / RECORDS);
  const message = (i: number): string => {
    const head = `W1202 08:00:00.000000     700 kubelet.go:2412] "Probe failed" probeType="Readiness" pod="default/web-${i % 500}" seq=${i} output="`;
    return `${head}${'x'.repeat(MESSAGE_CHARS - head.length - 1)}"`;
  };

  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-stream-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'var/log/pods'), { recursive: true });
  await writeJournal(
    path.join(root, 'var/log/journal'),
    'system',
    (function* () {
      for (let i = 0; i < RECORDS; i++) {
        yield kubeletAt({ realtimeUs: first + i * step, monoUs: 1_000_000 + i * step, message: message(i) });
      }
    })(),
  );

  const hostFs = new HostFs(root);
  const journal = new JournalSource({ hostFs, deadlineMs: 120_000 });
  const deps = { hostFs, journal, runtime: null, index: null, kmsg: null, kube: null, config: { nodeName: 'node1', kubeconfig: null } } as unknown as TimelineDeps;
  const deadlines = { containerRows: 120_000, kernelLog: 120_000, journal: 120_000, kubeEvents: 120_000 };
  const read = (sinceUs: number, untilUs = Date.now() * 1000) => {
    const q: TimelineQuery = { sinceUs, untilUs, pods: null, sources: new Set(['journal']), limit: 500, verbose: false, nowUs: Date.now() * 1000 };
    return readTimeline(deps, q, { deadlines });
  };

  t.test('a read of 50,000 notable records holds the newest 500 events, not the records', async (t) => {
    // the same read once over a few records first: what a first read loads is not the read's
    await read(first, first + 20 * step);
    const base = usedAfterGc();
    let peak = 0;
    let samples = 0;
    // every 10,000 entries the agent's one journalctl runner parses, once the read has taken each
    const runner = journal as unknown as { collect: (...a: unknown[]) => Promise<unknown> };
    const collect = runner.collect.bind(journal);
    let entries = 0;
    runner.collect = (args, bounds, signal, onEntry, ...rest) =>
      collect(args, bounds, signal, (e: unknown) => {
        const r = (onEntry as (e: unknown) => unknown)(e);
        if (++entries % 10_000 === 0) {
          samples++;
          peak = Math.max(peak, usedAfterGc() - base);
        }
        return r;
      }, ...rest);
    const body = await read(Date.now() * 1000 - 3_600_000_000);
    runner.collect = collect;
    t.ok(body.sources.journal!.ok, JSON.stringify(body.sources));
    t.equal(samples, JOURNAL_SCAN / 10_000, 'the heap was sampled while the journal was read');

    // holding the records read would take at least their messages' characters (one byte each)
    const messageBytes = JOURNAL_SCAN * MESSAGE_CHARS;
    t.ok(peak < messageBytes / 4, `heap after a full GC during the read grew ${(peak / 2 ** 20).toFixed(1)} MiB at most, against ${(messageBytes / 2 ** 20).toFixed(1)} MiB of messages read`);

    // the answer: the newest 500 of the newest JOURNAL_SCAN records, oldest first, and what was left out
    t.equal(body.events.length, 500);
    t.equal(body.truncated, true);
    t.same(
      body.events.map((e) => Number(/seq=(\d+)/.exec(e.summary)?.[1])),
      Array.from({ length: 500 }, (_, k) => RECORDS - 500 + k),
      'the newest records, oldest first',
    );
    t.match(body.events.at(-1), { source: 'journal', kind: 'probe-failed', severity: 'warning', pod: { namespace: 'default', name: `web-${(RECORDS - 1) % 500}` } });
    t.equal(body.events.at(-1)!.evidence[0]!.excerpt, message(RECORDS - 1));
    t.equal(body.events.at(-1)!.time, formatMicros(first + (RECORDS - 1) * step));
    t.same(body.warnings, [`journal: only the newest ${JOURNAL_SCAN} records of the window were read`, `journal: ${JOURNAL_SCAN - 500} older events of the window left out (limit 500)`]);

    // after the answer nothing of the read is left
    t.ok(usedAfterGc() - base < messageBytes / 4, 'and after it');
  });
}
