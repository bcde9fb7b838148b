/** The timeline followed: the window first, then only what is new, each event once. */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/agent.js';
import { loadConfig } from '../../src/config.js';
import { deadlines } from '../../src/deadlines.js';
import { closeSources, createSources } from '../../src/sources.js';
import { followTimeline, type FollowItem } from '../../src/view/timeline/follow.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { Writable } from 'node:stream';

const BTIME = Math.floor(Date.now() / 1000) - 700;
const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-follow-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'proc'), { recursive: true });
writeFileSync(path.join(root, 'proc/stat'), `cpu 1\nbtime ${BTIME}\n`);
const kmsg = path.join(root, 'kmsg.txt');
writeFileSync(kmsg, readFileSync(kmsgFixture('captured-6.1.0-57-amd64.kmsg'), 'utf8'));
const { config } = loadConfig(['--host-root', root, '--kmsg-path', kmsg], {});
const sources = createSources(config, createLogger({ logLevel: 'error' }, new Writable({ write: (_c, _e, cb) => cb() })));
t.teardown(() => closeSources(sources));

t.test('the window, then each new event once', async (t) => {
  const ac = new AbortController();
  const nowUs = Date.now() * 1000;
  const q = { sinceUs: nowUs - 3600e6, untilUs: nowUs, pods: null, sources: new Set(['kernel'] as const), limit: 500, verbose: false, nowUs };
  const it = followTimeline(sources, q, { deadlines: deadlines(config), signal: ac.signal, timing: { intervalMs: 20, overlapMs: 30_000 } });
  const first: FollowItem[] = [];
  // the captured ring: hung tasks from 589.498029 s after boot
  for (;;) {
    const r = await it.next();
    first.push(r.value as FollowItem);
    if (first.filter((x) => x.kind === 'event').length === 3) break;
  }
  t.ok(first.every((x) => x.kind === 'event' && x.event.source === 'kernel'), 'the window\'s events first');
  // let a few polls pass with nothing new, then the kernel writes a record
  await new Promise((r) => setTimeout(r, 100));
  const tsUsec = Date.now() * 1000 - BTIME * 1e6;
  appendFileSync(kmsg, `3,9001,${tsUsec},-;INFO: task later:4242 blocked for more than 120 seconds.\n`);
  const seen: string[] = [];
  for (;;) {
    const r = await it.next();
    const v = r.value as FollowItem;
    if (v.kind !== 'event') continue;
    seen.push(`${v.event.time} ${v.event.summary}`);
    if (v.event.summary.includes('later:4242') || v.event.summary.includes('later (pid 4242)')) break;
  }
  const all = [...first.map((f) => (f.kind === 'event' ? `${f.event.time} ${f.event.summary}` : '')), ...seen];
  t.equal(all.length, 27, 'the 26 kernel problems of the captured ring, then the new one');
  t.match(all.at(-1), /later/);
  t.equal(new Set(all).size, all.length, 'nothing sent twice over several polls');
  ac.abort();
  const end = await it.next();
  t.equal(end.done, true, 'ends on its signal');
});
