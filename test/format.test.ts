/** How sizes, times and excerpts read: the same in the text tables and in triage findings. */
import t from 'tap';
import { ago, clip, escapeTerminal, formatDuration, humanSize, parseDuration, percent, secondsSince, shortId, stateWord } from '../src/format.js';

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

t.test('one duration grammar: Go\'s plus days, written back in the largest whole unit', async (t) => {
  t.equal(parseDuration('7d'), 7 * 86_400_000, 'days, as --since 7d has always been written');
  t.equal(parseDuration('1d12h'), 36 * 3_600_000);
  t.equal(parseDuration('500ms'), 500);
  for (const bad of ['', '5', 'ms', '1w', '-1s', '1e3s', '1.s', `${'1s'.repeat(40)}`]) t.equal(parseDuration(bad), null, JSON.stringify(bad.slice(0, 20)));
  t.equal(formatDuration(120_000), '2m', 'as kubectl wait --timeout reads it');
  t.equal(formatDuration(7_200_000), '2h');
  t.equal(formatDuration(86_400_000), '24h', 'Go has no d: a day is written 24h');
  t.equal(formatDuration(90_000), '90s');
  t.equal(formatDuration(0), '0s');
});

t.test('escapeTerminal: every C0, DEL, C1 and bidi control written as a visible, inert escape', async (t) => {
  // the observed shape: erase the row, up, erase the header, retitle the window, conceal the rest
  t.equal(escapeTerminal('a\x1b[2K\x1b[1A\x1b]0;title\x07\x1b[8mb'), 'a\\x1b[2K\\x1b[1A\\x1b]0;title\\x07\\x1b[8mb');
  t.equal(escapeTerminal('\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f'), '\\x00\\x01\\x08\\t\\n\\x0b\\x0c\\r\\x1f\\x7f');
  t.equal(escapeTerminal('\u0080\u009b2J\u009d0;t\u009c\u009f'), '\\u0080\\u009b2J\\u009d0;t\\u009c\\u009f', 'C1 (CSI, OSC, ST as single characters)');
  t.equal(escapeTerminal('\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069'), '\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069', 'bidi embeddings, overrides, isolates');
  const kept = 'plain ASCII ~ \\x1b (a backslash is kept), ünïcödé ✓, \u00a0, \u200f, 日本, 😀';
  t.equal(escapeTerminal(kept), kept, 'printable text, a backslash and other Unicode are untouched');
  t.equal(escapeTerminal(''), '');
  // every code point: the escaped form holds no control at all, and only the listed ones change
  let all = '';
  for (let c = 0; c < 0x2100; c++) all += String.fromCharCode(c);
  const out = escapeTerminal(all);
  // eslint-disable-next-line no-control-regex
  t.notOk(/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/.test(out));
  t.equal(out.length, all.length + 29 * 3 + 3 * 1 + 3 + 32 * 5 + 9 * 5, 'C0 as \\xNN (tab, newline, CR as \\t \\n \\r), DEL \\x7f, C1 and bidi as \\uNNNN');
});

t.test('escapeTerminal keepNewlines: a whole text answer keeps its lines, nothing else', async (t) => {
  t.equal(escapeTerminal('row 1\nrow\t2\r\n\x1b[2J', { keepNewlines: true }), 'row 1\nrow\\t2\\r\n\\x1b[2J');
});

t.test('escapeTerminal json: the same JSON document, with no control left in it', async (t) => {
  const value = { cmd: 'a\u009b2J\u202eb\x7f', nested: [{ 'k\u2066': 'v\u0085' }], n: 1 };
  for (const doc of [JSON.stringify(value), JSON.stringify(value, null, 2), JSON.stringify(value, null, '\t')]) {
    const out = escapeTerminal(doc, { json: true });
    t.same(JSON.parse(out), value, 'parses to the same value');
    // eslint-disable-next-line no-control-regex
    t.notOk(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/.test(out), 'only JSON whitespace is left');
    t.match(out, '\\u009b2J\\u202eb\\u007f');
  }
  t.equal(escapeTerminal('{"a":"\x1b"}', { json: true }), '{"a":"\\u001b"}', 'a raw control (invalid JSON) is escaped too');
});

t.test('escapeTerminal is one pass of a character class: a large hostile input is escaped whole', async (t) => {
  const n = 1 << 20;
  const hostile = '\x1b['.repeat(n);
  const out = escapeTerminal(hostile);
  t.equal(out.length, n * 5);
  t.ok(out.startsWith('\\x1b[\\x1b['));
  t.equal(escapeTerminal('a'.repeat(n)), 'a'.repeat(n), 'text without controls comes back unchanged');
});
