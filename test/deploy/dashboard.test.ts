/**
 * deploy/grafana/nodetruth.json: every metric the dashboard queries is one the agent's
 * real /metrics exports (scraped from the app built on the captured node's cgroup tree,
 * a FAKE CRI runtime and the captured OOM kernel log, as test/metrics does), every label
 * it filters, groups or names in a legend is on those series (or is a target label the
 * ServiceMonitor adds), promtool parses every query, and the panels cover what on-call
 * needs: OOM kills, throttling, PSI, runtime readiness, restarts, node PID and disk use.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { realNode } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Target {
  expr: string;
  legendFormat?: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  datasource?: { type: string; uid: string };
}
const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/nodetruth.json'), 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string }; definition?: string }[] };
};
const panels = dashboard.panels.filter((p) => p.type !== 'row');
const exprs = panels.flatMap((p) => (p.targets ?? []).map((tg) => ({ panel: p.title, ...tg })));

/** Grafana's variables replaced by values PromQL accepts. */
const substitute = (e: string) => e.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '1h').replace(/\$(node|namespace)\b/g, '.*');

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** Metric names and label names a PromQL expression uses (enough for dashboard queries). */
function promqlRefs(expr: string): { metrics: Set<string>; labels: Set<string>; selectors: { metric: string; labels: string[] }[] } {
  let e = substitute(expr);
  const metrics = new Set<string>();
  const labels = new Set<string>();
  const selectors: { metric: string; labels: string[] }[] = [];
  e = e.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  e = e.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g, (_, metric: string | undefined, body: string) => {
    const ls = [...body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!);
    ls.forEach((l) => labels.add(l));
    if (metric && !KEYWORDS.has(metric)) {
      metrics.add(metric);
      selectors.push({ metric, labels: ls });
    }
    return ' ';
  });
  e = e.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, _k: string, body: string) => {
    body
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .forEach((l) => labels.add(l));
    return ' ';
  });
  e = e.replace(/\[[^\]]*\]/g, ' ');
  for (const m of e.matchAll(/(?<![a-zA-Z0-9_:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![a-zA-Z0-9_:])(?!\s*\()/g)) {
    if (!KEYWORDS.has(m[1]!.toLowerCase())) {
      metrics.add(m[1]!);
      selectors.push({ metric: m[1]!, labels: [] });
    }
  }
  return { metrics, labels, selectors };
}

/** Series names and label sets from the real scrape: histogram TYPEs give _bucket/_sum/_count. */
function exposition(text: string): { names: Set<string>; labelsOf: Map<string, Set<string>> } {
  const names = new Set<string>();
  const labelsOf = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type;
      names.add(name!);
      if (kind === 'histogram') ['_bucket', '_sum', '_count'].forEach((s) => names.add(name + s));
      if (kind === 'summary') ['_sum', '_count'].forEach((s) => names.add(name + s));
      continue;
    }
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!m) continue;
    const set = labelsOf.get(m[1]!) ?? new Set<string>();
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) set.add(l[1]!);
    labelsOf.set(m[1]!, set);
  }
  return { names, labelsOf };
}

/** Labels Prometheus puts on every scraped series: job, instance, and the ServiceMonitor's relabelings. */
function targetLabels(): Set<string> {
  const sm = parseYaml(readFileSync(path.join(ROOT, 'deploy/daemonset/servicemonitor.yaml'), 'utf8')) as {
    spec: { endpoints: { relabelings?: { targetLabel?: string }[] }[] };
  };
  const out = new Set(['job', 'instance']);
  for (const ep of sm.spec.endpoints) for (const r of ep.relabelings ?? []) if (r.targetLabel) out.add(r.targetLabel);
  return out;
}

t.test('the PromQL reader finds names and labels', async (t) => {
  const r = promqlRefs('topk(10, sum by (node, pod) (rate(a_total{node=~"$node", container!=""}[$__rate_interval])) / sum by (node, pod) (rate(b_total[5m])) > 0)');
  t.same([...r.metrics].sort(), ['a_total', 'b_total']);
  t.same([...r.labels].sort(), ['container', 'node', 'pod']);
  t.same([...promqlRefs('histogram_quantile(0.99, sum by (le) (rate(x_bucket[1m])))').metrics], ['x_bucket']);
  t.same([...promqlRefs('1 - nodetruth_node_disk_available_ratio{node=~"$node"}').metrics], ['nodetruth_node_disk_available_ratio']);
});

t.test('layout: unique ids, on the 24-column grid, no overlaps, one datasource variable', async (t) => {
  const ids = dashboard.panels.map((p) => p.id);
  t.equal(new Set(ids).size, ids.length, 'unique panel ids');
  t.match(dashboard.uid, /^[a-zA-Z0-9_-]{1,40}$/);
  for (const p of dashboard.panels) {
    t.ok(p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: within 24 columns`);
    if (p.type !== 'row') {
      t.ok((p.targets ?? []).length > 0, `${p.title}: has queries`);
      t.same(p.datasource, { type: 'prometheus', uid: '${datasource}' }, `${p.title}: datasource variable`);
    }
  }
  const boxes = dashboard.panels.map((p) => p.gridPos);
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i]!;
      const b = boxes[j]!;
      const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
      t.notOk(overlap, `${dashboard.panels[i]!.title} and ${dashboard.panels[j]!.title} do not overlap`);
    }
  t.ok(dashboard.templating.list.some((v) => v.type === 'datasource' && v.name === 'datasource'));
});

t.test('it shows what on-call needs', async (t) => {
  const titles = panels.map((p) => p.title).join('\n');
  const queried = new Set(exprs.flatMap((e) => [...promqlRefs(e.expr).metrics]));
  const need: [string, RegExp, string[]][] = [
    ['OOM kills', /OOM kills/, ['nodetruth_kernel_oom_kills_total', 'container_oom_events_total']],
    ['throttling', /[Tt]hrottl/, ['container_cpu_cfs_throttled_periods_total', 'container_cpu_cfs_periods_total']],
    ['PSI', /pressure/i, ['container_pressure_cpu_waiting_seconds_total', 'container_pressure_memory_stalled_seconds_total', 'container_pressure_io_stalled_seconds_total']],
    ['runtime readiness', /Runtime ready/, ['nodetruth_runtime_ready', 'nodetruth_network_ready']],
    ['restarts', /restarts/i, ['nodetruth_container_attempt']],
    ['node PID use', /PID use/, ['nodetruth_node_pid_use_ratio']],
    ['node disk use', /Disk/, ['nodetruth_node_disk_available_ratio', 'nodetruth_node_disk_inodes_free_ratio']],
  ];
  for (const [what, title, metrics] of need) {
    t.match(titles, title, `a panel for ${what}`);
    for (const m of metrics) t.ok(queried.has(m), `${what}: queries ${m}`);
  }
});

t.test('promtool parses every query', { skip: existsSync('/usr/bin/promtool') ? false : 'promtool not installed (apt-get install prometheus)' }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-dash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rules = {
    groups: [{ name: 'dashboard', rules: exprs.map((e, i) => ({ record: `dashboard:q${i}`, expr: substitute(e.expr) })) }],
  };
  const file = path.join(dir, 'rules.json'); // JSON is YAML
  writeFileSync(file, JSON.stringify(rules));
  const r = await run('/usr/bin/promtool', ['check', 'rules', file]).then(
    (o) => ({ code: 0, out: o.stdout + o.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
  t.equal(r.code, 0, r.out);
});

t.test('every metric and label the dashboard queries is one /metrics exports', async (t) => {
  const node = realNode('systemd');
  const cri = new FakeCriServer(capturedRuntime());
  await cri.start();
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--node-name', 'node-a']);
  t.teardown(async () => {
    await agent.close();
    await cri.stop();
    node.cleanup();
  });
  // two scrapes: the CRI histogram has observations from the first by the second
  await agent.app.inject({ method: 'GET', url: '/metrics' });
  const res = await agent.app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 200);
  const { names, labelsOf } = exposition(res.body);
  t.ok(names.size > 30, 'a real scrape');
  const target = targetLabels();
  t.ok(target.has('node'), 'the ServiceMonitor adds a node label');

  const queries = [
    ...exprs.map((e) => ({ where: `${e.panel}: ${e.expr}`, expr: e.expr, legend: e.legendFormat ?? '' })),
    ...dashboard.templating.list
      .filter((v) => v.type === 'query')
      .map((v) => {
        const q = typeof v.query === 'string' ? v.query : v.query!.query;
        const m = /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(q)!;
        return { where: `variable ${v.name}: ${q}`, expr: m[1]!, legend: `{{${m[2]}}}` };
      }),
  ];
  for (const q of queries) {
    const refs = promqlRefs(q.expr);
    t.ok(refs.metrics.size > 0, `${q.where}: names a metric`);
    for (const m of refs.metrics) t.ok(names.has(m), `${m} is exported (${q.where})`);
    // labels: on the series of the metrics the query reads, or target labels
    const available = new Set<string>(target);
    let sampled = false;
    for (const m of refs.metrics) {
      const ls = labelsOf.get(m);
      if (ls) {
        sampled = true;
        ls.forEach((l) => available.add(l));
      }
    }
    if (!sampled) {
      t.comment(`no samples in the fixture scrape for ${[...refs.metrics].join(', ')}: labels not checked`);
      continue;
    }
    const used = new Set([...refs.labels, ...[...q.legend.matchAll(/\{\{\s*([a-zA-Z_]\w*)\s*\}\}/g)].map((m) => m[1]!)]);
    for (const l of used) t.ok(available.has(l), `label ${l} exists (${q.where})`);
  }
});
