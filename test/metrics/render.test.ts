/**
 * render.ts writes the per-cgroup families itself; prom-client is the reference. The same
 * families, label values (hostile ones among them: quotes, backslashes, newlines, UTF-8)
 * and values through a prom-client registry must give the same bytes. The render yields to the
 * event loop in slices: counted, and the text the same whatever the slice.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import t from 'tap';
import type { CgroupRecord } from '../../src/model/cgroup.js';
import { CGROUP_FAMILIES } from '../../src/metrics/collectors/cgroups.js';
import { cgroupSeries, escapeLabel } from '../../src/metrics/labels.js';
import { renderCgroupChunks, type CgroupFamily } from '../../src/metrics/render.js';
import type { CgroupSeries } from '../../src/metrics/labels.js';
import type { Slicing } from '../../src/lib/slices.js';

/** the chunks production copies into the scrape body, as one Buffer */
const render = async (families: readonly CgroupFamily[], series: readonly CgroupSeries[], slicing?: Slicing): Promise<Buffer> =>
  Buffer.concat(await renderCgroupChunks(families, series, slicing));

const LABELS = ['namespace', 'pod', 'container', 'id', 'image', 'pod_uid'] as const;

const record = (i: number, over: { path?: string; podName?: string | null; containerName?: string | null }): CgroupRecord =>
  ({
    kind: i === 0 ? 'pod' : 'container',
    path: over.path ?? `/kubepods.slice/pod${i}`,
    driver: 'systemd',
    qos: 'burstable',
    podUid: `uid-${i}`,
    containerId: i === 0 ? null : `${i}`.padStart(64, 'a'),
    runtime: null,
    podName: over.podName ?? `pod-${i}`,
    podNamespace: 'ns',
    containerName: over.containerName ?? `c${i}`,
    sandbox: false,
    memory: { workingSet: 1000 * i, max: i % 2 ? 'max' : 4096, high: i % 3 === 0 ? null : i % 2 ? 'max' : 3686400, events: { oomKill: i, high: 10 * i } },
    cpu: { usageUsec: 1_500_000 * i, nrPeriods: i, nrThrottled: i % 3 === 0 ? null : 1, throttledUsec: -5 },
    pressure: { cpu: { some: { total: 42 }, full: null }, memory: null, io: { some: { total: 7 }, full: { total: 3 } } },
  }) as unknown as CgroupRecord;

const hostile = ['a"b', 'back\\slash', 'new\nline', 'ünïcødé ☃', '"\\\n"'];
const records = hostile.map((h, i) => record(i, { path: `/kubepods.slice/${h}`, containerName: h })).concat([record(9, {})]);

t.test('renderCgroupChunks gives prom-client bytes for the same series', async (t) => {
  // records come unnamed from the scrape; with no index the names are the runtime-down ones ("")
  const { series } = cgroupSeries(records, null, 100);
  const mine = await render(CGROUP_FAMILIES, series);

  const reg = new Registry();
  for (const f of CGROUP_FAMILIES) {
    const extraNames = Object.keys(f.extra ?? {});
    const Metric = f.kind === 'counter' ? Counter : Gauge;
    const m = new Metric({ name: f.name, help: f.help, labelNames: [...LABELS, ...extraNames], registers: [reg] });
    for (const s of series) {
      const v = f.value(s.rec);
      if (v === null || !Number.isFinite(v) || (f.kind === 'counter' && v < 0)) continue;
      const r = s.rec;
      const labels = { namespace: '', pod: '', container: '', id: r.path, image: '', pod_uid: r.podUid, ...f.extra };
      if (m instanceof Counter) m.inc(labels, v);
      else (m as Gauge).set(labels, v);
    }
  }
  const theirs = await reg.metrics();
  t.equal(`${mine}\n`, theirs);
});

t.test('escapeLabel escapes as prom-client does, and leaves plain values alone', async (t) => {
  t.equal(escapeLabel('plain-value_1.2'), 'plain-value_1.2');
  t.equal(escapeLabel('a"b\\c\nd'), 'a\\"b\\\\c\\nd');
});

t.test('a big render yields between slices of bounded size, and the text is the same', async (t) => {
  // 3,000 containers' worth of cgroups (~4,400 series per family)
  const many = Array.from({ length: 4400 }, (_, i) => record(i + 1, { path: `/kubepods.slice/kubepods-burstable.slice/pod${i}/cri-containerd-${`${i}`.padStart(64, 'f')}.scope` }));
  const { series } = cgroupSeries(many, null, 10_000);
  const whole = await render(CGROUP_FAMILIES, series, { sliceChars: Infinity, pause: () => t.fail('no yield without a bound') as never });
  let values = 0;
  const perSlice: number[] = [];
  // the series written between two yields, counted (a family's value() is called once per series; a left-out one writes nothing)
  const written = (f: (typeof CGROUP_FAMILIES)[number], v: number | null) => v !== null && Number.isFinite(v) && !(f.kind === 'counter' && v < 0);
  const counted = CGROUP_FAMILIES.map((f) => ({ ...f, value: (r: CgroupRecord) => { const v = f.value(r); if (written(f, v)) values++; return v; } }));
  const sliceChars = 64 * 1024;
  const sliced = await render(counted, series, {
    sliceChars,
    pause: async () => {
      perSlice.push(values);
      values = 0;
    },
  });
  t.ok(sliced.equals(whole), 'the same bytes');
  t.ok(perSlice.length >= Math.floor(whole.length / sliceChars) - 1, `${perSlice.length} yields for ${whole.length} characters`);
  // a series line is ~300 characters here: a 64 KiB slice holds at most ~220 of them
  const line = Math.min(...whole.toString().split('\n').filter((l) => !l.startsWith('#') && l).map((l) => l.length));
  t.ok(Math.max(...perSlice) <= Math.ceil(sliceChars / line) + 1, `at most ${Math.max(...perSlice)} series between two yields`);
});

t.test('values are written as JS prints them, digit by digit or not', async (t) => {
  const values = [0, 7, 10, 99, 1000, 4096, 2 ** 31, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21, 1.5, 0.000042, 1e-7, -3, -0.5, 123456789.125];
  const recs = values.map((v, i) => ({ ...record(i + 1, {}), memory: { ...record(1, {}).memory, workingSet: v } }) as CgroupRecord);
  const { series } = cgroupSeries(recs, null, 100);
  const gauge = CGROUP_FAMILIES.filter((f) => f.name === 'container_memory_working_set_bytes');
  const text = (await render(gauge, series)).toString();
  const written = text.split('\n').filter((l) => !l.startsWith('#')).map((l) => l.slice(l.lastIndexOf(' ') + 1));
  t.same([...written].sort(), values.map((v) => `${v}`).sort()); // the series come in path order
});
