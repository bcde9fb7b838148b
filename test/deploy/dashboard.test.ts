/**
 * deploy/grafana/nodetruth.json: every metric the dashboard queries is one the agent's
 * real /metrics exports (scraped from the app built on the captured node's cgroup tree,
 * a FAKE CRI runtime and the captured OOM kernel log, as test/metrics does), every label
 * it filters, groups or names in a legend is on those series (or is a target label the
 * ServiceMonitor adds), promtool parses every query, and the panels cover what on-call
 * needs: OOM kills, throttling, PSI, runtime readiness, restarts, node PID and disk use; and,
 * in a real Prometheus, every query returns data with the runtime answering and without it.
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { realNode } from '../fixtures/node-tree.js';
import { freePort } from '../helpers/agent-process.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const run = promisify(execFile);
// Real Prometheus waits for real scrapes: on a machine loaded by image and Go builds the
// evaluation moment below can take minutes to exist.
t.setTimeout(420_000);
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

/**
 * Every expression against a real Prometheus scraping two agents of the same captured node:
 * one whose runtime answers (names on every series) and one whose runtime does not (series
 * keep pod_uid and id, lose pod and container names: the failure the dashboard is opened for).
 * Counters grow while Prometheus scrapes (cgroup files rewritten, a container restarted, the
 * kernel log's OOM kills printed again with new sequence numbers), so rates and increases are
 * real. Prometheus is killed by its PID.
 */
const PROMETHEUS = '/usr/bin/prometheus';

/** Expressions that return nothing by design on a node, and why: each is checked to be empty there, so the list stays honest. */
const EMPTY_BY_DESIGN: { node: 'named' | 'unnamed'; match: RegExp; why: string }[] = [
  { node: 'unnamed', match: /nodetruth_container_attempt/, why: "restarts are the runtime's own list: without it there is none (Runtime ready says why)" },
  { node: 'named', match: /nodetruth_cri_errors_total/, why: 'a runtime that answers makes no CRI errors' },
  { node: 'named', match: /nodetruth_metrics_cgroups_dropped/, why: 'shown only when cgroups are dropped (over 5,000)' },
  { node: 'unnamed', match: /nodetruth_metrics_cgroups_dropped/, why: 'shown only when cgroups are dropped (over 5,000)' },
];

/** Every integer after a counter key in the cgroup files grows: usage_usec, throttled_*, total=, oom. */
function growCounters(dir: string, step: number): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) growCounters(p, step);
    else if (/^(cpu\.stat|memory\.events|(cpu|memory|io)\.pressure)$/.test(e.name)) {
      const text = readFileSync(p, 'utf8');
      writeFileSync(
        p,
        text
          .replace(/^((?:usage|user|system|throttled)_usec|nr_periods|nr_throttled) (\d+)$/gm, (_, k: string, v: string) => `${k} ${Number(v) + step * 1000}`)
          .replace(/total=(\d+)/g, (_, v: string) => `total=${Number(v) + step * 5000}`)
          .replace(/^(oom|oom_kill) (\d+)$/gm, (_, k: string, v: string) => `${k} ${Number(v) + 1}`),
      );
    }
  }
}

/** The captured OOM report printed again: the same records, sequence numbers moved past the last. */
function reprintOom(src: string, dst: string, offset: number): void {
  const recs = readFileSync(src, 'utf8')
    .split('\n')
    .filter((l) => /^\d+,\d+,/.test(l))
    .map((l) => l.replace(/^(\d+),(\d+),(\d+),/, (_, pri: string, seq: string, ts: string) => `${pri},${Number(seq) + offset},${Number(ts) + offset * 1000},`));
  appendFileSync(dst, recs.join('\n') + '\n');
}


t.test('every expression returns data in real Prometheus, with the runtime answering and without it', { skip: existsSync(PROMETHEUS) ? false : 'prometheus not installed (apt-get install prometheus)' }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-dash-prom-'));
  const named = realNode('systemd');
  const unnamed = realNode('systemd');
  const cri = new FakeCriServer(capturedRuntime());
  await cri.start();
  const kmsgOf = (name: string) => {
    const p = path.join(dir, `${name}.kmsg`);
    copyFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), p);
    return p;
  };
  const common = (n: typeof named, name: string) => ['--host-root', n.root, '--kmsg-path', kmsgOf(name), '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--node-name', name];
  const agents = {
    named: await testApp([...common(named, 'named'), '--cri-endpoint', cri.endpoint]),
    unnamed: await testApp([...common(unnamed, 'unnamed'), '--cri-endpoint', `unix://${unnamed.root}/run/nothing.sock`, '--cri-timeout', '200ms']),
  };
  const ports: Record<string, number> = {};
  for (const [k, a] of Object.entries(agents)) {
    await a.app.listen({ host: '127.0.0.1', port: 0 });
    ports[k] = (a.app.server.address() as AddressInfo).port;
  }
  const targets = Object.entries(ports)
    .map(([k, port]) => `      - targets: ['127.0.0.1:${port}']\n        labels: {node: ${k}}\n`)
    .join('');
  writeFileSync(path.join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 5s\n  scrape_timeout: 5s\nscrape_configs:\n  - job_name: nodetruth\n    static_configs:\n${targets}`);
  const promPort = await freePort();
  const prom = spawn(PROMETHEUS, [`--config.file=${dir}/prometheus.yml`, `--storage.tsdb.path=${dir}/data`, `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let promLog = '';
  prom.stderr!.on('data', (d) => (promLog += d));
  const promExited = new Promise<void>((r) => prom.once('exit', () => r()));
  let step = 0;
  const ticker = setInterval(() => {
    step++;
    for (const n of [named, unnamed]) growCounters(path.join(n.root, 'sys/fs/cgroup'), step);
  }, 1000);
  t.teardown(async () => {
    clearInterval(ticker);
    if (prom.exitCode === null && prom.signalCode === null) process.kill(prom.pid!, 'SIGTERM');
    const kill = setTimeout(() => prom.exitCode === null && process.kill(prom.pid!, 'SIGKILL'), 5000);
    await promExited;
    clearTimeout(kill);
    for (const a of Object.values(agents)) await a.close();
    await cri.stop();
    named.cleanup();
    unnamed.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = `http://127.0.0.1:${promPort}/api/v1`;
  /** the evaluation time of the checks below (unset: now) */
  let at: number | undefined;
  const query = async (q: string): Promise<{ ok: boolean; n: number; error?: string; labels: Record<string, string>[] }> => {
    const r = await fetch(`${api}/query?query=${encodeURIComponent(q)}${at === undefined ? '' : `&time=${at}`}`);
    const j = (await r.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
    return j.status === 'success' ? { ok: true, n: j.data!.result.length, labels: j.data!.result.map((x) => x.metric) } : { ok: false, n: 0, error: j.error, labels: [] };
  };
  // Every check below is evaluated at one moment when the latest scrape of both targets
  // succeeded and each target has three successful scrapes in the minute before it (rate() and
  // increase() need two samples of a series, and a series such as a CRI call's histogram
  // appears one scrape after the call). A scrape over its 5 s timeout (a loaded machine: the
  // agents share this process with the test) marks all of that target's series stale until the
  // next one: evaluated at "now", whichever expressions ran in that second came back empty.
  const evaluationMoment = async (): Promise<{ at: number | undefined; scrapes: [number, string][][] }> => {
    const upRange = await fetch(`${api}/query?query=${encodeURIComponent('up[1m]')}`).then((r) => r.json() as Promise<{ data: { result: { values: [number, string][] }[] } }>);
    const scrapes = upRange.data.result.map((x) => x.values);
    const latestAtOrBefore = (vals: [number, string][], time: number) => vals.filter(([ts]) => ts <= time).at(-1);
    const upInMinuteBefore = (vals: [number, string][], time: number) => vals.filter(([ts, v]) => ts <= time && ts > time - 60 && v === '1').length;
    const moment = scrapes
      .flat()
      .map(([ts]) => ts)
      .sort((a, b) => b - a)
      .find((time) => scrapes.length === 2 && scrapes.every((vals) => latestAtOrBefore(vals, time)?.[1] === '1' && upInMinuteBefore(vals, time) >= 3));
    return { at: moment, scrapes };
  };
  // until both targets have samples from after the counters grew and the OOM kills were printed
  // again, and a moment to evaluate at (below) where both show; bounded for a machine where scrapes time out
  const deadline = Date.now() + 240_000;
  let reprints = 0;
  let lastReprint = 0;
  let found: number | undefined;
  let waiting = {};
  for (;;) {
    // once Prometheus holds a few samples of both, and again every 20 s: new OOM kills in the kernel log,
    // every container restarted. The checks look one minute back ([1m]): a moment found only after a
    // minute of failed scrapes (a loaded machine) still has an increase in it.
    if (Date.now() - lastReprint > 20_000 && ((await query('count_over_time(up[1m]) >= 3').catch(() => null))?.n ?? 0) === 2) {
      reprints++;
      lastReprint = Date.now();
      for (const k of ['named', 'unnamed']) reprintOom(kmsgFixture('oom-memcg-systemd.kmsg'), path.join(dir, `${k}.kmsg`), 1000 * reprints);
      for (const c of cri.node.containers) c.attempt += 3; // a crash loop: attempt 3 or more
    }
    const candidate = reprints > 0 && step >= 8 ? (await evaluationMoment().catch(() => null))?.at : undefined;
    if (candidate !== undefined) {
      at = candidate;
      const r = await query('count by (node) (increase(nodetruth_kernel_oom_kills_total[1m]) > 0)').catch(() => null);
      const restarts = await query('delta(nodetruth_container_attempt{node="named"}[1m]) > 0').catch(() => null);
      at = undefined;
      waiting = { at: candidate, oomNodes: r?.n, restarting: restarts?.n, step, reprints };
      if (r?.n === 2 && (restarts?.n ?? 0) > 0) found = candidate;
    }
    if (found !== undefined || Date.now() > deadline || prom.exitCode !== null) break;
    await new Promise((res) => setTimeout(res, 250));
  }
  const slowest = await fetch(`${api}/query?query=${encodeURIComponent('max_over_time(scrape_duration_seconds[5m])')}`)
    .then((r) => r.json() as Promise<{ data: { result: { metric: { node: string }; value: [number, string] }[] } }>)
    .then((j) => j.data.result.map((x) => `${x.metric.node} ${x.value[1]} s`).join(', '))
    .catch(() => '');
  t.ok(reprints > 0 && step >= 8 && prom.exitCode === null, `prometheus scraped both agents (last ${JSON.stringify(waiting)}; slowest scrape: ${slowest}; log: ${promLog.slice(0, 500)})`);
  const moment = await evaluationMoment();
  at = found;
  t.ok(at !== undefined, `a moment when the latest scrape of both targets succeeded, after three in its minute (${JSON.stringify(moment.scrapes)})`);
  const runtimeUp = await query('nodetruth_runtime_up');
  t.same(Object.fromEntries(runtimeUp.labels.map((l) => [l.node, 1])), { named: 1, unnamed: 1 }, 'both targets scraped');
  const unnamedWs = await query('container_memory_working_set_bytes{node="unnamed"}');
  t.ok(unnamedWs.n > 0 && unnamedWs.labels.every((l) => !l.pod && !l.container && l.pod_uid && l.id), 'without the runtime: pod_uid and id, no names');

  for (const node of ['named', 'unnamed'] as const) {
    const empty: string[] = [];
    for (const e of exprs) {
      const q = e.expr.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '1h').replace(/\$node\b/g, node).replace(/\$namespace\b/g, '.*');
      const r = await query(q);
      t.ok(r.ok, `${node}: ${e.panel}: Prometheus evaluates it (${r.error ?? ''})`);
      const designed = EMPTY_BY_DESIGN.find((d) => d.node === node && d.match.test(e.expr));
      if (designed) t.equal(r.n, 0, `${node}: ${e.panel}: empty by design (${designed.why})`);
      else if (r.n === 0) empty.push(`${e.panel}: ${e.expr}`);
      else if (node === 'unnamed' && /\{\{\s*pod\s*\}\}/.test(e.legendFormat ?? '') && !/nodetruth_container_attempt/.test(e.expr))
        t.ok(r.labels.every((l) => l.pod), `${node}: ${e.panel}: every series has a pod to show (its UID when the name is gone)`);
    }
    t.same(empty, [], `${node}: every expression returns data`);
  }
});
