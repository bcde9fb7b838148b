/** cgroup v2 file parsers on the contents captured from a real node (shared/captures/node-vm). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Bytes } from '../../../src/readers/cgroup/bytes.js';
import type { FoundCgroup } from '../../../src/readers/cgroup/cgroups.js';
import {
  emptyMemory,
  ioStatAt,
  limitAt,
  memoryStatInto,
  parseCpu,
  parseCpuMax,
  parseMemoryEvents,
  parsePsi,
  parseSingle,
  workingSet,
} from '../../../src/readers/cgroup/parse.js';
import { readMany } from '../../../src/readers/cgroup/stats.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { CAPTURED, memoryStat } from '../../fixtures/node-tree.js';

/** A byte parser over a file's whole text, as the reader hands it the read buffer. */
const over = <T>(f: (b: Bytes, s: number, e: number, onBad?: () => void) => T, text: string, onBad?: () => void): T => {
  const b = Buffer.from(text, 'utf8');
  return f(b, 0, b.length, onBad);
};

/** memory.stat's keys a record holds, from a file's text. */
const memoryStatOf = (text: string, onBad?: () => void) => {
  const m = emptyMemory();
  over((b, s, e, bad) => memoryStatInto(m, b, s, e, bad), text, onBad);
  return m;
};

const ROOT = mkdtempSync(path.join(tmpdir(), 'nodetruth-cgroup-files-'));
t.teardown(() => rmSync(ROOT, { recursive: true, force: true }));
let cgroups = 0;

/** One cgroup's files (and cgroup.controllers) under a host root, read by the agent's reader: its record and the reader's warnings. */
async function readCgroupFiles(files: Record<string, string>) {
  const rel = `/sys/fs/cgroup/kubepods.slice/cg${cgroups++}`;
  mkdirSync(path.join(ROOT, rel), { recursive: true });
  writeFileSync(path.join(ROOT, rel, 'cgroup.controllers'), 'cpu memory\n');
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(ROOT, rel, f), text);
  const fs = new HostFs(ROOT);
  const warnings: string[] = [];
  const read = await readMany(fs, [{ path: rel, dir: await fs.dir(rel) } as FoundCgroup], undefined, undefined, warnings);
  return { stats: read[0]!.stats, warnings, path: rel };
}

t.test('cpu.stat of the throttled container (0.1-core quota, spinning)', async (t) => {
  const cpu = parseCpu(CAPTURED.spin.cpuStat, CAPTURED.spin.cpuMax, CAPTURED.spin.cpuWeight);
  t.same(cpu, {
    usageUsec: 1824308,
    userUsec: 1710795,
    systemUsec: 113512,
    nrPeriods: 169,
    nrThrottled: 168,
    throttledUsec: 14961853,
    nrBursts: 0,
    burstUsec: 0,
    max: { quotaUsec: 10000, periodUsec: 100000, quotaCores: 0.1 },
    weight: 4,
  });
});

t.test('cpu.stat without the cpu controller has only the usage keys', async (t) => {
  const cpu = parseCpu('usage_usec 5555\nuser_usec 4999\nsystem_usec 556\n', null, null);
  t.same(cpu, {
    usageUsec: 5555,
    userUsec: 4999,
    systemUsec: 556,
    nrPeriods: null,
    nrThrottled: null,
    throttledUsec: null,
    nrBursts: null,
    burstUsec: null,
    max: null,
    weight: null,
  });
  t.same(parseCpu(null, null, null).usageUsec, null);
});

t.test('cpu.max', async (t) => {
  t.same(parseCpuMax('max 100000\n'), { quotaUsec: 'max', periodUsec: 100000, quotaCores: 'max' });
  t.same(parseCpuMax('250000 100000\n'), { quotaUsec: 250000, periodUsec: 100000, quotaCores: 2.5 });
  t.same(parseCpuMax('1000 3000\n'), { quotaUsec: 1000, periodUsec: 3000, quotaCores: 0.3333 });
  t.equal(parseCpuMax(null), null);
  t.equal(parseCpuMax(''), null);
  t.equal(parseCpuMax('max'), null, 'no period');
  t.equal(parseCpuMax('10 0'), null, 'zero period');
  t.equal(parseCpuMax('ten 100000'), null);
});

t.test('"max" is kept as the string "max"; null only for a missing file', async (t) => {
  t.equal(over(limitAt, CAPTURED.podSlice.memoryMax), 'max');
  t.equal(over(limitAt, CAPTURED.oomChild.memoryMax), 33554432);
  t.equal(over(limitAt, CAPTURED.oomChild.memorySwapMax), 0, 'swap.max 0 is a limit of zero, not unlimited');
  t.equal((await readCgroupFiles({ 'cpu.stat': '' })).stats.memory.max, null, 'memory.max missing: null');
  t.equal(over(limitAt, 'garbage'), null);
  // memory.high: "max\n" in every cgroup with the memory controller until someone sets it;
  // kubelet's MemoryQoS writes whole pages (64Mi limit × 0.9, floored to 4 KiB: 60395520)
  t.equal(over(limitAt, 'max\n'), 'max', 'memory.high default');
  t.equal(over(limitAt, '60395520\n'), 60395520, 'memory.high set');
  let told = 0;
  t.equal(over(limitAt, 'max max\n', () => told++), null, 'two words: not a limit');
  t.equal(over(limitAt, 'maximum\n', () => told++), null);
  t.equal(told, 2, 'each bad memory.high told');
});

t.test('single values', async (t) => {
  t.equal(parseSingle(CAPTURED.oomChild.memoryCurrent), 184320);
  t.equal(parseSingle('  42 \n'), 42);
  t.equal(parseSingle(''), null);
  t.equal(parseSingle('max'), null);
  t.equal(parseSingle(null), null);
});

t.test('memory.events: container (child OOM-killed) and pod slice (hierarchical, counts the dead container)', async (t) => {
  t.same(parseMemoryEvents(CAPTURED.oomChild.memoryEvents), { low: 0, high: 0, max: 32, oom: 1, oomKill: 1, oomGroupKill: 0 });
  t.same(parseMemoryEvents(CAPTURED.podSlice.memoryEvents), { low: 0, high: 0, max: 50, oom: 2, oomKill: 2, oomGroupKill: 0 });
  t.same(parseMemoryEvents(CAPTURED.podSlice.memoryEventsLocal), { low: 0, high: 0, max: 0, oom: 0, oomKill: 0, oomGroupKill: 0 });
  t.same(parseMemoryEvents('low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n'), { low: 0, high: 0, max: 3, oom: 1, oomKill: 1, oomGroupKill: null }, 'before 5.17: no oom_group_kill');
  t.equal(parseMemoryEvents(null), null);
});

t.test('flat keyed files ignore junk lines', async (t) => {
  const junk = 'anon 1\n\nfile x\nnokey\n active_file 3\nshmem -2\n';
  let told = 0;
  t.match(memoryStatOf(junk, () => told++), { anon: 1, file: null, activeFile: null, inactiveFile: null, shmem: -2 });
  t.equal(told, 1, 'the file is told once');
  t.match(memoryStatOf('anon 1\nfile 2\nanon 3\n'), { anon: 3, file: 2 }, 'the last line of a key wins');
});

/*
 * Only the keys a record holds are kept, but every line is checked: a tenant who writes
 * junk into any line of its memory.stat is told about, whichever key the line names.
 */
t.test('hostile flat keyed lines: counted, skipped, the rest kept', async (t) => {
  const cases: [string, string][] = [
    ['21 digits', `pgfault ${'9'.repeat(21)}\n`],
    ['beyond 2^64', 'pgfault 99999999999999999999\n'],
    ['hex', 'pgfault 0x10\n'],
    ['exponent', 'pgfault 1e9\n'],
    ['decimal', 'pgfault 1.5\n'],
    ['no value', 'pgfault\n'],
    ['no key', ' 5\n'],
    ['non-ASCII space', 'pgfault\u00a05\n'],
    ['NUL', 'pgfault 5\u0000\n'],
    ['CR only', '\r\n'],
  ];
  for (const [what, line] of cases) {
    const { stats, warnings, path } = await readCgroupFiles({ 'cpu.stat': '', 'memory.current': '100\n', 'memory.stat': `anon 1\n${line}inactive_file 40\n` });
    t.same(warnings, [`cgroup ${path}: malformed memory.stat (bad lines skipped, the rest read)`], `${what}: told`);
    t.match(stats.memory, { anon: 1, inactiveFile: 40, workingSet: 60 }, `${what}: the good lines kept`);
  }
  t.equal(parseSingle(`${'1'.repeat(20)}\n`), 11111111111111111111, '20 digits: a u64 the kernel can write');
  t.equal(parseSingle('18446744073709551615\n'), 18446744073709551615, 'u64 max: the double Number() gives');
  t.equal(parseSingle('9007199254740993\n'), Number('9007199254740993'), 'above 2^53: rounded as Number() rounds');
  t.equal(parseSingle(`${'1'.repeat(21)}\n`), null);
  t.equal(parseSingle('-5\n'), -5, 'a sign, as before (cpu.max quota -1 on old kernels)');
  t.equal(parseSingle('\t 7\r\n'), 7, 'ASCII whitespace trimmed');
  t.equal(parseSingle('\u00a07\n'), null, 'other whitespace is not');
  t.match(memoryStatOf(`anon${'x'.repeat(64 * 1024)}`), { anon: null, file: null, activeFile: null, inactiveFile: null, shmem: null }, 'a 64 KiB line without a space');
});

t.test('hostile PSI and io.stat lines are skipped whole', async (t) => {
  const good = 'some avg10=1.00 avg60=2.00 avg300=3.00 total=4\n';
  for (const bad of [
    'some avg10=1.00 avg60=2.00 avg300=3.00 total=-4',
    'some avg10=1e3 avg60=2.00 avg300=3.00 total=4',
    'some avg10=0x1 avg60=2.00 avg300=3.00 total=4',
    'some avg10=1.00001 avg60=2.00 avg300=3.00 total=4',
    'some avg10=1.00 avg60=2.00 avg300=3.00',
    'some avg10 avg60=2.00 avg300=3.00 total=4',
    'some avg10=1=2 avg60=2.00 avg300=3.00 total=4',
    `full avg10=1.00 avg60=2.00 avg300=3.00 total=${'9'.repeat(21)}`,
    `some ${'k=v '.repeat(9)}`,
    'sum avg10=1.00 avg60=2.00 avg300=3.00 total=4',
  ]) {
    let told = 0;
    t.same(parsePsi(`${good}${bad}\n`, () => told++), { some: { avg10: 1, avg60: 2, avg300: 3, total: 4 }, full: null }, bad);
    t.equal(told, 1, `${bad}: told`);
  }
  t.same(parsePsi('some avg10=0.58 avg60=47.58 avg300=99.99 total=1\n')!.some, { avg10: 0.58, avg60: 47.58, avg300: 99.99, total: 1 }, 'the doubles Number() gives');
  let told = 0;
  const io = over(ioStatAt, `8:0 rbytes=1 wbytes=2\n8:x rbytes=1\n1:2:3 rbytes=1\n12345678901:0 rbytes=1\n8:1 ${'k=1 '.repeat(17)}\n8:2 rbytes=zz\n`, () => told++);
  t.same(io.map((d) => [d.device, d.rbytes, d.wbytes]), [['8:0', 1, 2], ['8:2', 0, 0]], 'bad devices and too many fields skipped; a bad value is 0, as a missing one');
  t.equal(told, 1);
});

t.test('PSI', async (t) => {
  t.same(parsePsi(CAPTURED.spin.cpuPressure), {
    some: { avg10: 47.58, avg60: 13.58, avg300: 3.09, total: 10277915 },
    full: { avg10: 47.58, avg60: 13.58, avg300: 3.09, total: 10260438 },
  });
  t.same(parsePsi(CAPTURED.procPressure.io), {
    some: { avg10: 0, avg60: 0.18, avg300: 0.12, total: 781909 },
    full: { avg10: 0, avg60: 0.04, avg300: 0.01, total: 281312 },
  });
  t.same(parsePsi('some avg10=1.50 avg60=0.00 avg300=0.00 total=12\n'), { some: { avg10: 1.5, avg60: 0, avg300: 0, total: 12 }, full: null }, 'old kernels: no full line for cpu');
  t.equal(parsePsi('full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'), null, 'no some line: nothing');
  t.equal(parsePsi('some avg10=x avg60=0.00 avg300=0.00 total=1\n'), null);
  t.equal(parsePsi(null), null);
});

t.test('io.stat', async (t) => {
  t.same(over(ioStatAt, '254:0 rbytes=1458176 wbytes=0 rios=37 wios=0 dbytes=0 dios=0\n8:16 rbytes=1 wbytes=2 rios=3 wios=4\n'), [
    { device: '254:0', rbytes: 1458176, wbytes: 0, rios: 37, wios: 0, dbytes: 0, dios: 0 },
    { device: '8:16', rbytes: 1, wbytes: 2, rios: 3, wios: 4, dbytes: 0, dios: 0 },
  ]);
  t.same(over(ioStatAt, ''), [], 'no I/O yet: empty file, empty list');
  t.same(over(ioStatAt, '254:0 rbytes=1 wbytes=1 rios=1 wios=1 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=5\n')[0]?.rbytes, 1, 'io.cost keys ignored');
  t.equal((await readCgroupFiles({ 'cpu.stat': '' })).stats.io, null, 'no io.stat: null');
});

t.test('memory: working set as cAdvisor computes it', async (t) => {
  const { stats, warnings } = await readCgroupFiles({
    'cpu.stat': '',
    'memory.current': CAPTURED.oomChild.memoryCurrent,
    'memory.max': CAPTURED.oomChild.memoryMax,
    'memory.high': 'max\n',
    'memory.peak': CAPTURED.oomChild.memoryPeak,
    'memory.swap.current': '0\n',
    'memory.swap.max': CAPTURED.oomChild.memorySwapMax,
    'memory.events': CAPTURED.oomChild.memoryEvents,
    'memory.events.local': CAPTURED.oomChild.memoryEventsLocal,
    'memory.stat': memoryStat({ anon: 36864, file: 12288, inactiveFile: 8192 }),
  });
  t.same(warnings, []);
  const m = stats.memory;
  t.match(m, { current: 184320, max: 33554432, high: 'max', peak: 33554432, swapCurrent: 0, swapMax: 0, anon: 36864, file: 12288, inactiveFile: 8192, activeFile: 4096, shmem: 0 });
  t.equal(m.workingSet, 184320 - 8192);
  t.equal(m.events?.oomKill, 1);
  t.equal(workingSet(100, 150), 0, 'floored at 0 when inactive_file exceeds usage');
  t.equal(workingSet(100, null), 100, 'no memory.stat: usage');
  t.equal(workingSet(null, 5), null);
  const none = (await readCgroupFiles({})).stats.memory;
  t.same(Object.values(none), Object.values(none).map(() => null), 'no memory controller: all null');
});
