/**
 * Timeline benchmark: GET /v1/timeline?since=1h over HTTP from the agent (dist/, a process of its
 * own, --max-age 0 so every request is a new reading) on the FAKE node at 100, 1,000 and 3,000
 * containers (its FAKE CRI in a process of its own), with one generated journal of N records in
 * the last hour (every third kubelet, 1 in 97 of those an E line; every third containerd; the rest
 * cron) written by systemd-journal-remote and hard-linked into each fake host root; in the same
 * run, journalctl reading the same units and window (what the timeline reads: the newest
 * JOURNAL_SCAN records; and the whole window), timed with /usr/bin/time.
 * Agent figures: wall time per request, the agent's CPU per request (its own and its reaped
 * journalctl children's, from /proc/<pid>/stat), RSS before the first request, after the runs,
 * and VmHWM (the process's peak since it started); per run, the sources that missed their deadline
 * (sources and warnings of the last answer in full).
 * Run: nice -n 10 npx tsx bench/timeline.ts [records] [runs] [containers,...]
 * NODETRUTH_BENCH_DIST=<dir>/dist runs the agent from a build elsewhere (e.g. of a commit's
 * `git archive`, with proto/ and a node_modules link beside it) instead of building this dist/;
 * several, comma-separated, run one after the other at each scale over the same journal (a
 * before/after in one run).
 * Prints a human summary on stderr and one JSON report on stdout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { journalctlArgs } from '../src/readers/journal/journalctl.js';
import { journalQuery } from '../src/readers/journal/query.js';
import { TIMELINE_UNITS, JOURNAL_SCAN } from '../src/view/timeline/journal.js';
import { exportEntry, MACHINE_ID, writeJournal } from '../test/fixtures/journal/gen.js';
import { fakeTreeDir } from '../test/fixtures/fake-node.js';
import { freePort, hwmBytes, rssBytes, startFakeCriProcess, waitFor200, type Proc } from '../test/helpers/agent-process.js';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { fakeNodeAgent, machine, median, mib, report, round, type FakeNodeAgent } from './lib.js';

const n = Number(process.argv[2] ?? 1_000_000);
const runs = Number(process.argv[3] ?? 3);
const scales = (process.argv[4] ?? '100,1000,3000').split(',').map(Number);
const PER_POD = 4;
const BOOT = '13aee3a87a774e2d9686f3c19d408b06';
const say = (s: string) => process.stderr.write(`${s}\n`);

/** user+system CPU of a process and its reaped children, ms (/proc/<pid>/stat fields 14-17). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((s, i) => s + Number(f[i]), 0); // utime stime cutime cstime
  return (ticks * 1000) / 100; // USER_HZ
}

/**
 * journalctl over a host root with the argv the agent's timeline gives it (journalctlArgs of the
 * same query: units, window, --lines newest first, export with the agent's --output-fields), timed by
 * /usr/bin/time: wall s, user+sys s, max RSS MiB. `lines` null: the whole window.
 */
function journalctl(root: string, sinceUs: number, untilUs: number, lines: number | null): { wallS: number; cpuS: number; maxRssMiB: number; argv: string } {
  const argv = [`--root=${root}`, ...journalctlArgs(journalQuery({ units: [...TIMELINE_UNITS], sinceUs, untilUs, tailLines: lines, reverse: lines !== null }))];
  const r = spawnSync('/usr/bin/time', ['-f', 'TIME %e %U %S %M', 'journalctl', ...argv], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 20 });
  const m = /TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(r.stderr ?? '');
  if (r.status !== 0 || !m) throw new Error(`journalctl ${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { wallS: Number(m[1]), cpuS: round(Number(m[2]) + Number(m[3])), maxRssMiB: round(Number(m[4]) / 1024, 1), argv: `journalctl ${argv.join(' ').replace(root, '<root>')}` };
}

const FLAGS = ['--max-age', '0', '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn'];

/** The FAKE node, its FAKE CRI and the agent (this dist/, or `dist`), each a process. */
async function startNode(pods: number, dist: string): Promise<FakeNodeAgent> {
  if (!dist) return fakeNodeAgent({ pods, perPod: PER_POD, journal: false, agentFlags: FLAGS });
  const host = await makeFakeScaleHost({ pods, perPod: PER_POD, journal: false });
  let cri: (Proc & { endpoint: string }) | undefined;
  try {
    cri = await startFakeCriProcess(host.options);
    const port = await freePort();
    const flags = ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, ...FLAGS];
    const child = spawn(process.execPath, [path.join(dist, 'cli.js'), 'serve', '--listen', `127.0.0.1:${port}`, ...flags], { cwd: path.dirname(dist), stdio: ['ignore', 'ignore', 'pipe'] });
    const stderr: string[] = [];
    child.stderr!.on('data', (d) => stderr.push(String(d)));
    const exited = once(child, 'exit');
    const agent: Proc & { url: string } = {
      child,
      pid: child.pid!,
      lines: [],
      stderr,
      url: `http://127.0.0.1:${port}`,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          await exited;
        }
        return child.exitCode;
      },
    };
    await waitFor200(`${agent.url}/healthz`, agent, 60_000, 20).catch(async (err) => {
      await agent.stop();
      throw err;
    });
    const c = cri;
    return { host, cri: c, agent, stop: async () => (await agent.stop(), await c.stop(), host.cleanup()) };
  } catch (err) {
    await cri?.stop();
    host.cleanup();
    throw err;
  }
}

const base = mkdtempSync(path.join(fakeTreeDir(), 'nodetruth-bench-timeline-'));
const results: object[] = [];
try {
  // ---- one journal of n records over the last hour, shared by every scale ----------------
  let t0 = performance.now();
  const start = Date.now() * 1000 - 3_590_000_000;
  const step = Math.floor(3_580_000_000 / n);
  function* records() {
    for (let i = 0; i < n; i++) {
      const us = start + i * step;
      const f: Array<[string, string]> = [['__REALTIME_TIMESTAMP', String(us)], ['__MONOTONIC_TIMESTAMP', String(1_000_000 + i * step)], ['_BOOT_ID', BOOT], ['_MACHINE_ID', MACHINE_ID], ['_PID', String(700 + (i % 3))], ['PRIORITY', '6']];
      const k = i % 3;
      if (k === 0) yield exportEntry([...f, ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'kubelet.service'], ['SYSLOG_IDENTIFIER', 'kubelet'], ['MESSAGE', `${i % 97 === 0 ? 'E' : 'I'}1202 08:00:00.000000     700 kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/web-${i % 500}" seq=${i}`]]);
      else if (k === 1) yield exportEntry([...f, ['_TRANSPORT', 'stdout'], ['_SYSTEMD_UNIT', 'containerd.service'], ['SYSLOG_IDENTIFIER', 'containerd'], ['MESSAGE', `time="x" level=info msg="ImageStatus for \\"registry.k8s.io/pause:3.10\\" returns image status" seq=${i}`]]);
      else yield exportEntry([...f, ['_TRANSPORT', 'syslog'], ['_SYSTEMD_UNIT', 'cron.service'], ['SYSLOG_IDENTIFIER', 'CRON'], ['MESSAGE', `(root) CMD (run-parts /etc/cron.hourly) seq=${i}`]]);
    }
  }
  const journalDir = path.join(base, 'journal');
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
    await writeJournal(journalDir, `system@${String(f).padStart(4, '0')}`, chunk);
  }
  const journalFiles = readdirSync(path.join(journalDir, MACHINE_ID));
  const generatedAt = Date.now();
  say(`generated ${n} journal records over the last hour in ${files} files: ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const dists = (process.env.NODETRUTH_BENCH_DIST ?? '').split(',');
  for (const containers of scales) for (const dist of dists) {
    const node = await startNode(Math.ceil(containers / PER_POD), dist);
    try {
      const jdir = path.join(node.host.root, 'var/log/journal', MACHINE_ID);
      mkdirSync(jdir, { recursive: true });
      for (const f of journalFiles) linkSync(path.join(journalDir, MACHINE_ID, f), path.join(jdir, f));
      const pid = node.agent.child.pid!;
      const rssBefore = rssBytes(pid);
      const ms: number[] = [];
      const cpu: number[] = [];
      /** per run: the sources that failed or missed their deadline (a loaded machine's answer is then partial) */
      const failed: string[][] = [];
      let last: any;
      let bytes = 0;
      for (let i = 0; i <= runs; i++) {
        const c0 = cpuMs(pid);
        t0 = performance.now();
        const res = await fetch(`${node.agent.url}/v1/timeline?since=1h`, { signal: AbortSignal.timeout(120_000) });
        const text = await res.text();
        const wall = performance.now() - t0;
        if (res.status !== 200) throw new Error(`GET /v1/timeline answered ${res.status}: ${text.slice(0, 500)}`);
        if (i === 0) {
          say(`  ${containers} containers: first request ${wall.toFixed(0)} ms (not counted)`);
          continue;
        }
        ms.push(wall);
        cpu.push(cpuMs(pid) - c0);
        last = JSON.parse(text);
        failed.push(Object.entries(last.sources as Record<string, { ok: boolean }>).filter(([, v]) => !v.ok).map(([k]) => k));
        bytes = text.length;
      }
      const rssAfter = rssBytes(pid);
      const hwm = hwmBytes(pid);
      const nowUs = Date.now() * 1000;
      const scan = journalctl(node.host.root, nowUs - 3600e6, nowUs, JOURNAL_SCAN);
      const row = {
        dist: dist || 'dist/',
        containers: node.host.node.containers.length,
        pods: node.host.node.pods.length,
        timeline: {
          wallMsP50: round(median(ms), 0),
          wallMs: ms.map((x) => round(x, 0)),
          failedSourcesPerRun: failed,
          agentCpuMsP50: round(median(cpu), 0),
          events: last.events.length,
          truncated: last.truncated,
          answerBytes: bytes,
          sourcesMs: Object.fromEntries(Object.entries(last.sources as Record<string, { ms: number; events: number; ok: boolean }>).map(([k, v]) => [k, { ms: round(v.ms, 0), events: v.events, ok: v.ok }])),
          warnings: last.warnings,
          agentRssMiB: { beforeFirstRequest: mib(rssBefore), afterRuns: mib(rssAfter), peakVmHWM: mib(hwm) },
        },
        journalctlScan: scan,
        load: machine().load,
      };
      results.push(row);
      say(`  ${row.dist}, ${row.containers} containers: /v1/timeline?since=1h p50 ${row.timeline.wallMsP50} ms (${row.timeline.wallMs.join(', ')}), agent CPU p50 ${row.timeline.agentCpuMsP50} ms; failed sources per run ${JSON.stringify(failed)}; RSS ${row.timeline.agentRssMiB.beforeFirstRequest} → ${row.timeline.agentRssMiB.afterRuns} MiB, VmHWM ${row.timeline.agentRssMiB.peakVmHWM} MiB; ${row.timeline.events} events, truncated ${row.timeline.truncated}; sources ${JSON.stringify(row.timeline.sourcesMs)}`);
      say(`  journalctl -n ${JOURNAL_SCAN}: ${scan.wallS} s wall, ${scan.cpuS} s CPU, max RSS ${scan.maxRssMiB} MiB; load ${row.load}`);
    } finally {
      await node.stop();
    }
  }
  // the whole window of those units, once (it does not depend on the containers)
  const root = path.join(base, 'root');
  mkdirSync(path.join(root, 'var/log/journal', MACHINE_ID), { recursive: true });
  for (const f of journalFiles) linkSync(path.join(journalDir, MACHINE_ID, f), path.join(root, 'var/log/journal', MACHINE_ID, f));
  const nowUs = Date.now() * 1000;
  const whole = journalctl(root, nowUs - 3600e6, nowUs, null);
  say(`journalctl, the whole window of the units: ${whole.wallS} s wall, ${whole.cpuS} s CPU, max RSS ${whole.maxRssMiB} MiB`);
  report('timeline', `nice -n 10 npx tsx bench/timeline.ts ${n} ${runs} ${scales.join(',')}`, {
    journal: { records: n, files, generatedSecondsBeforeEnd: round((Date.now() - generatedAt) / 1000, 0), unitsRead: TIMELINE_UNITS, scanCap: JOURNAL_SCAN },
    scales: results,
    journalctlWholeWindow: whole,
  });
} finally {
  rmSync(base, { recursive: true, force: true });
}
