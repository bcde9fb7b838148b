/** How sizes, times and excerpts read: the same in the text tables and in triage findings. */
import t from 'tap';
import { ago, clip, formatDuration, humanSize, parseDuration, percent, secondsSince, shortId, stateWord } from '../src/format.js';

t.test('sizes are IEC, as kubelet and kubectl write limits (Mi, Gi)', async (t) => {
  const cases: [number, string][] = [
    [0, '0B'],
    [512, '512B'],
    [1023, '1023B'],
    [1024, '1KiB'],
    [1536, '1.5KiB'],
    [4096, '4KiB'],
    [594_000, '580.1KiB'],
    [64 * 2 ** 20, '64MiB'], // cgroup memory.max of a 64Mi limit (decimal units said 67.1MB)
    [245 * 2 ** 20, '245MiB'],
    [100 * 2 ** 30 * 0.08, '8GiB'],
    [1.5 * 2 ** 40, '1.5TiB'],
    [3 * 2 ** 50, '3PiB'],
    [2 ** 70, `${2 ** 20}PiB`],
  ];
  for (const [n, text] of cases) t.equal(humanSize(n), text, `${n}`);
  // rounding never writes 1024 of a unit: the next unit says it
  t.equal(humanSize(1024 * 1024 - 10), '1MiB');
  t.equal(humanSize(1024 * 1024 - 60), '1023.9KiB');
});

t.test('percentages, ids, crictl state words, excerpts', async (t) => {
  t.equal(percent(0.957), '95.7%');
  t.equal(percent(1), '100.0%');
  t.equal(shortId('c0ffee02aaaaaaaaaaaaaaaa'), 'c0ffee02aaaaa');
  t.equal(shortId(null), '');
  t.equal(stateWord('CONTAINER_RUNNING'), 'Running');
  t.equal(stateWord('SANDBOX_NOTREADY'), 'NotReady');
  t.equal(stateWord('SOMETHING_NEW'), 'SOMETHING_NEW', 'an unknown state is shown as the runtime said it');
  t.equal(clip('short'), 'short');
  t.equal(clip('x'.repeat(401)), `${'x'.repeat(400)}…`);
  t.equal(clip('abcdef', 3), 'abc…');
});

t.test('ages: seconds since, and crictl\'s CREATED column', async (t) => {
  const now = Date.parse('2026-11-29T19:45:00Z');
  const before = (s: number) => new Date(now - s * 1000).toISOString();
  t.equal(secondsSince(before(120), now), 120);
  t.equal(secondsSince(null, now), null);
  t.equal(ago(null, now), '');
  t.equal(ago(before(0), now), 'Less than a second ago');
  t.equal(ago(before(-30), now), 'Less than a second ago', 'a clock ahead of ours is not a negative age');
  t.equal(ago(before(1), now), '1 second ago');
  t.equal(ago(before(59), now), '59 seconds ago');
  t.equal(ago(before(180), now), '3 minutes ago');
  t.equal(ago(before(3600), now), '1 hour ago');
  t.equal(ago(before(3 * 86400 + 5), now), '3 days ago');
});

t.test('durations are written in the form the flags read back', async (t) => {
  for (const ms of [1, 500, 1500, 2000, 60_000, 3_600_000]) t.equal(parseDuration(formatDuration(ms)), ms, formatDuration(ms));
  t.equal(formatDuration(2000), '2s');
  t.equal(formatDuration(1500), '1500ms');
  t.equal(parseDuration('1.5s'), 1500);
  t.equal(parseDuration('1m30s'), 90_000);
  t.equal(parseDuration('2 s'), null);
});
