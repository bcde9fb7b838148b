/** `nodetruth timeline`: the route's answer in the terminal, flags through the route's own schema. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { timelineMain, TIMELINE_USAGE_EXIT } from '../../src/cli/timeline.js';
import { formatMicros } from '../../src/readers/journal/time.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';

const BTIME = Math.floor(Date.now() / 1000) - 700;
const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-cli-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'proc'), { recursive: true });
writeFileSync(path.join(root, 'proc/stat'), `cpu 1\nbtime ${BTIME}\n`);
const kmsg = path.join(root, 'kmsg.txt');
writeFileSync(kmsg, readFileSync(kmsgFixture('captured-6.1.0-57-amd64.kmsg'), 'utf8'));

const run = async (...args: string[]) => {
  let out = '';
  let err = '';
  const code = await timelineMain(['--host-root', root, '--kmsg-path', kmsg, ...args], { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, env: {} });
  return { code, out, err };
};

t.test('the kernel\'s events, aligned, in the host\'s clock', async (t) => {
  const r = await run('--source', 'kernel', '--source', 'oom', '--since', '15m');
  t.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  t.match(lines[0], /^TIME\s+SOURCE\s+POD\s+CONTAINER\s+WHAT$/);
  t.ok(lines.some((l) => l.startsWith(`${formatMicros(BTIME * 1e6 + 289_556_638)}   oom `)), r.out);
  t.ok(lines.some((l) => l.startsWith(formatMicros(BTIME * 1e6 + 589_498_029)) && l.includes('kernel-hung-task')));
});

t.test('--json, --limit, --pod', async (t) => {
  const r = await run('--source', 'oom', '--source', 'kernel', '--json', '--limit', '2', '--pod', 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8');
  t.equal(r.code, 0, r.err);
  const body = JSON.parse(r.out) as { events: Array<{ kind: string }>; truncated: boolean; clock: { kernel: string } };
  t.same(body.events.map((e) => e.kind), ['oom-kill']);
  t.equal(body.clock.kernel, 'btime');
});

t.test('bad flags: exit 3 with the reason', async (t) => {
  for (const [args, reason] of [
    [['--limit', '0'], /--limit: must be an integer between 1 and 5000/],
    [['--since', 'yesterday'], /--since: expected an RFC 3339 time/],
    [['--source', 'nope'], /--source: expected one of/],
    [['--bogus'], /Unknown option '--bogus'/],
  ] as const) {
    const r = await run(...args);
    t.equal(r.code, TIMELINE_USAGE_EXIT, args.join(' '));
    t.match(r.err, reason, r.err);
  }
});
