// The agent as a host process on the dev cluster's node: `nodetruth serve --host-root /` run by
// systemd in the guest (guest/start-agent.sh), as an operator runs it on a node they can log in
// to, beside the real kubelet and the workload Pods scripts/cluster/workload-check.sh made.
// Asked from this host through guest/control.sh's relay (node.json's relayPort):
//   - /v1/node and /v1/runtime read from the host's own root; a workload container's pid and
//     mnt namespaces its own, its net namespace its pod's, not the host's;
//   - /v1/timeline over the whole node: the faults workload-check made, each inside the interval
//     it was made in and in that order (the OOM kill, the hung tasks, the full conntrack table,
//     ext4's error and read-only remount and the bad disk), then containerd restarted by systemd;
//     pod= narrows it; format=text; a bad parameter is a 400;
//   - the kernel's ring as /dev/kmsg gives it, scanned by the kernel problem table
//     (NODETRUTH_E2E_WRITE_KMSG=1 keeps it as test/fixtures/kmsg/captured-<kernel>*.kmsg);
//   - GET /v1/bundle, read back by the bundle reader (NODETRUTH_E2E_WRITE_EXAMPLE=1 keeps it as
//     examples/node-vm.tar.gz);
//   - SIGTERM stops the agent within 15 s.
//
//   node --import tsx test/e2e/cluster/host-check.ts [MADE.json]
// MADE.json: what workload-check made and when (its made.json); without it the checks of the
// workloads are skipped and say so. Environment: NODETRUTH_DEV_CLUSTER_DIR (the cluster's
// directory, default .dev-cluster); NODETRUTH_E2E_WRITE_KMSG, NODETRUTH_E2E_WRITE_EXAMPLE.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { routeKey } from '../../../src/bundle/format.js';
import { readBundle } from '../../../src/bundle/read.js';
import { splitKmsgText, type KmsgRecord } from '../../../src/readers/kmsg/parse.js';
import { formatKmsgRecord } from '../../helpers/kmsg.js';
import { scanKernelProblems } from '../../../src/view/kernel-problems.js';
import { projectRoot } from '../vm.js';
import { answer200, GiveUp, log, run, tailFile, waitFor } from '../util.js';

const DIR = resolve(process.env.NODETRUTH_DEV_CLUSTER_DIR ?? join(projectRoot, '.dev-cluster'));
const NODE = JSON.parse(readFileSync(join(DIR, 'node.json'), 'utf8')) as { relayPort?: number; journal: boolean; suite: string };
const SHARE = join(DIR, 'node', 'share');
const BASE = `http://127.0.0.1:${NODE.relayPort}`;

interface Interval {
  from: number;
  to: number;
}
/** What workload-check made, by the host's clock (ms): see scripts/cluster/workload-check.sh. */
interface Made {
  namespace: string;
  oom?: Interval & { podUid: string; containerId: string };
  hung?: Interval & { podUid: string; containerId: string };
  fsErrors?: Interval & { loop: string; nullb: string };
  conntrack?: Interval;
  crashloop?: { podUid: string };
  spinner?: { podUid: string; containerId: string };
}
const madeFile = process.argv[2];
const made: Made | undefined = madeFile ? (JSON.parse(readFileSync(madeFile, 'utf8')) as Made) : undefined;
const noWorkloads = made ? false : 'no MADE.json: workload-check did not run';

interface Reply {
  status: number;
  body: any;
  text: string;
  ms: number;
}
async function get(path: string, timeoutMs = 30_000): Promise<Reply> {
  const started = Date.now();
  const res = await fetch(BASE + path, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body, text, ms: Date.now() - started };
}
const get200 = (path: string, timeoutMs = 30_000) => answer200(`GET ${path}`, () => get(path, timeoutMs));

/** SCRIPT as root in the node (scripts/dev-cluster.sh guest): its output; throws on a non-zero exit. */
async function guest(script: string, secs = 60): Promise<string> {
  const r = await run('bash', ['scripts/dev-cluster.sh', 'guest', script, String(secs)], { cwd: projectRoot, timeoutMs: (secs + 30) * 1000 });
  if (r.code !== 0) throw new Error(`in the node: ${script.split('\n')[0]}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

const AGENT_LOG = join(SHARE, 'agent.log');
let started = false;
before(
  async () => {
    assert.ok(NODE.relayPort, `${join(DIR, 'node.json')} names no relayPort: bring the node up again`);
    assert.ok(existsSync(join(projectRoot, 'dist', 'cli.js')), 'no dist/cli.js: npm run build');
    rmSync(AGENT_LOG, { force: true });
    log(await guest('sh /nodetruth/test/e2e/guest/start-agent.sh --cri-timeout 2s'));
    started = true;
    let lastCheck = Date.now();
    await waitFor('the host-process agent answering /v1/runtime 200 through the relay', 300_000, async () => {
      const r = await get('/v1/runtime', 30_000).catch(() => undefined);
      if (r?.status === 200) return true;
      if (Date.now() - lastCheck > 5000) {
        lastCheck = Date.now();
        // a crashed agent is gone at once (--collect): do not wait the whole five minutes
        const st = (await guest('systemctl show -p ActiveState --value nodetruth.service')).trim();
        if (st !== 'active' && st !== 'activating') throw new GiveUp(`nodetruth.service is ${st || 'gone'} in the node`);
      }
      return undefined;
    }, 1000).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\nagent log tail:\n${tailFile(AGENT_LOG, 30)}`);
    });
  },
  { timeout: 400_000 },
);

after(async () => {
  if (started) await guest('timeout 20 systemctl stop nodetruth.service || systemctl kill -s KILL nodetruth.service; true', 40).catch(() => undefined);
});

function itemsOf(body: unknown, key = 'items'): any[] {
  const v = (body as Record<string, unknown> | null)?.[key];
  assert.ok(Array.isArray(v), `expected an array in .${key}, got: ${JSON.stringify(body).slice(0, 400)}`);
  return v;
}

test('host root: /v1/node reads cgroup v2 with the systemd driver and PSI from /, and the runtime is ready', async () => {
  const { body } = await get200('/v1/node');
  assert.equal(body.cgroup?.version, 'v2', JSON.stringify(body.cgroup));
  assert.ok(body.cgroup.drivers.includes('systemd'), JSON.stringify(body.cgroup));
  for (const k of ['cpu', 'memory', 'io']) assert.ok(body.pressure?.[k]?.some, `PSI ${k}: ${JSON.stringify(body.pressure?.[k])}`);
  assert.equal(body.runtime?.ready, true, JSON.stringify(body.runtime));
  const rt = (await get200('/v1/runtime')).body;
  assert.equal(rt.runtimeName, 'containerd');
  assert.equal(rt.cgroupDriver, 'systemd');
});

test('namespaces: the spinner\'s pid and mnt namespaces its own, its net namespace its pod sandbox\'s (the CNI bridge), none the host\'s', { skip: noWorkloads }, async () => {
  const { body } = await get200(`/v1/containers/${made!.spinner!.containerId}/namespaces`);
  const ns = (t: string) => itemsOf(body).find((n: { type: string }) => n.type === t);
  assert.deepEqual(['pid', 'mnt', 'net'].map((t) => ns(t)?.sharedWith), ['private', 'private', 'sandbox'], JSON.stringify(body));
});

// ---- the timeline of the whole node -----------------------------------------------------
interface TlEvent {
  time: string;
  source: 'kernel' | 'oom' | 'runtime' | 'journal' | 'kube';
  kind: string;
  severity: string;
  pod?: { namespace: string | null; name: string | null; uid: string | null };
  container?: { name: string | null; id: string | null; attempt: number | null };
  summary: string;
  evidence: Array<{ source: string; seq?: number; cursor?: string; call?: string; excerpt?: string }>;
}
interface TimelineOut {
  observedAt: string;
  since: string;
  limit: number;
  clock: { kernel: string };
  events: TlEvent[];
  truncated: boolean;
  sources: Partial<Record<TlEvent['source'], { ok: boolean; events: number; ms: number; error?: string }>>;
}
const SOURCE_ORDER = ['kernel', 'oom', 'runtime', 'journal', 'kube'];
const kindsOf = (evs: TlEvent[]) => JSON.stringify(evs.map((e) => `${e.time} ${e.source} ${e.kind} ${e.pod?.name ?? ''} ${e.container?.id?.slice(0, 12) ?? ''}`)).slice(0, 3000);

/** µs since the epoch of an event time: RFC 3339, UTC, exactly six fraction digits. */
function usOf(t: string): number {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})Z$/.exec(t);
  assert.ok(m, `event time ${JSON.stringify(t)} is not RFC 3339 UTC with microseconds`);
  return Date.parse(`${m[1]}Z`) * 1000 + Number(m[2]);
}

test('timeline: the whole node\'s faults in the order and intervals they were made in, then containerd restarted by systemd; pod= narrows it; format=text', { timeout: 600_000 }, async () => {
  let restart: Interval | undefined;
  if (NODE.journal) {
    const from = Date.now();
    await guest('systemctl restart containerd.service', 120);
    await waitFor('/v1/runtime answering 200 after the restart', 120_000, async () => ((await get('/v1/runtime', 30_000)).status === 200 ? true : undefined), 1000);
    restart = { from, to: Date.now() };
  } else {
    log('timeline: the node has no journald (up --no-journal): containerd\'s restart is not asked for');
  }
  const first = made?.oom?.from ?? Date.now();
  const sinceMin = Math.max(15, Math.ceil((Date.now() - first) / 60_000) + 1);
  // under TCG on a busy host a source can outlive its deadline in one reading: ask again (at most 3 times)
  let sent = 0;
  let got = 0;
  let tl: TimelineOut | undefined;
  for (let i = 0; i < 3; i++) {
    sent = Date.now();
    tl = (await get200(`/v1/timeline?since=${sinceMin}m`, 180_000)).body as TimelineOut;
    got = Date.now();
    const late = Object.entries(tl.sources).filter(([k, v]) => k !== 'kube' && !v.ok);
    if (late.length === 0) break;
    log(`timeline: sources that did not answer in time, asking again: ${JSON.stringify(late)}`);
  }
  const ev = tl!.events;
  writeFileSync(join(SHARE, 'timeline.json'), JSON.stringify(tl));
  log(`timeline: ${ev.length} events; sources ${JSON.stringify(tl!.sources)}; clock ${JSON.stringify(tl!.clock)}`);
  // the guest's clock against this host's (observedAt was taken between sent and got); a TCG
  // guest's clock falls behind the host's as it runs, so an interval is compared with slack as
  // large as the whole offset
  const offsetMs = Date.parse(tl!.observedAt) - (sent + got) / 2;
  const tolMs = Math.abs(offsetMs) + (got - sent) / 2 + 2000;
  log(`timeline: guest clock ${offsetMs.toFixed(0)} ms from the host's; interval slack ${tolMs.toFixed(0)} ms`);
  assert.equal(tl!.truncated, false, `the window held more than ${tl!.limit} events: ${kindsOf(ev.slice(0, 40))}`);
  for (const s of ['kernel', 'oom', 'runtime', ...(NODE.journal ? ['journal'] : [])] as const) assert.equal(tl!.sources[s as TlEvent['source']]?.ok, true, `${s}: ${JSON.stringify(tl!.sources)}`);
  assert.equal(tl!.clock.kernel, 'btime', JSON.stringify(tl!.clock));
  // oldest first; one instant's events in source order
  for (let i = 1; i < ev.length; i++) {
    const [a, b] = [ev[i - 1]!, ev[i]!];
    const d = usOf(b.time) - usOf(a.time);
    assert.ok(d > 0 || (d === 0 && SOURCE_ORDER.indexOf(a.source) <= SOURCE_ORDER.indexOf(b.source)), `events ${i - 1} and ${i} out of order: ${JSON.stringify([a, b]).slice(0, 800)}`);
  }
  const one = (what: string, pred: (e: TlEvent) => boolean): number => {
    const i = ev.findIndex(pred);
    assert.ok(i >= 0, `no ${what} in the timeline: ${kindsOf(ev)}`);
    return i;
  };
  const within = (e: TlEvent, iv: Interval) => {
    const ms = usOf(e.time) / 1000 - offsetMs;
    return ms >= iv.from - tolMs && ms <= iv.to + tolMs;
  };
  const inInterval = (what: string, e: TlEvent, iv: Interval) => {
    assert.ok(within(e, iv), `${what} at ${e.time} is outside its interval ${new Date(iv.from).toISOString()}..${new Date(iv.to).toISOString()} (host clock, slack ${tolMs.toFixed(0)} ms)`);
  };
  const order: Array<[string, number]> = [];
  const following = (what: string, i: number) => {
    for (const [w, j] of order) assert.ok(j < i, `${what} (${ev[i]!.time}) listed before ${w} (${ev[j]!.time})`);
    order.push([what, i]);
  };

  if (made?.oom) {
    const { containerId, podUid } = made.oom;
    const kill = ev[one(`oom-kill of ${containerId.slice(0, 12)}`, (e) => e.source === 'oom' && e.kind === 'oom-kill' && e.container?.id === containerId)]!;
    assert.deepEqual(kill.pod, { namespace: made.namespace, name: 'oom-victim', uid: podUid });
    assert.equal(kill.container?.name, 'hog');
    assert.equal(kill.severity, 'critical');
    assert.match(kill.summary, /^dd \(pid \d+\) killed by the OOM killer at its limit of 32 MiB$/);
    assert.equal(kill.evidence[0]?.source, 'kmsg');
    assert.ok(Number.isInteger(kill.evidence[0]?.seq), JSON.stringify(kill.evidence));
    assert.match(kill.evidence[0]?.excerpt ?? '', new RegExp(`oom-kill:constraint=CONSTRAINT_MEMCG,.*task_memcg=[^,]*cri-containerd-${containerId}\\.scope,task=dd,pid=\\d+`));
    inInterval('the OOM kill', kill, made.oom);
    const exit = ev[one('container-exited of the hog', (e) => e.source === 'runtime' && e.kind === 'container-exited' && e.container?.id === containerId)]!;
    assert.match(exit.summary, /^hog attempt 0 exited with code 137 \((OOMKilled|Error)\)$/);
    // kernel times are btime (whole seconds, so up to 1 s early) + time since boot
    const killVsExit = (usOf(kill.time) - usOf(exit.time)) / 1000;
    assert.ok(killVsExit <= 3000 && killVsExit >= -10_000, `the kill ${kill.time} and the exit ${exit.time}`);
    following('the OOM kill', ev.indexOf(kill));
  }
  if (made?.hung) {
    const { containerId, podUid } = made.hung;
    const hung = ev.filter((e) => e.source === 'kernel' && e.kind === 'kernel-hung-task' && e.container?.id === containerId);
    assert.ok(hung.length >= 1, `no kernel-hung-task of the writer: ${kindsOf(ev)}`);
    for (const e of hung) {
      assert.deepEqual(e.pod, { namespace: made.namespace, name: 'frozen-writer', uid: podUid });
      assert.equal(e.container?.name, 'writer');
      assert.ok(Number.isInteger(e.evidence[0]?.seq), JSON.stringify(e.evidence));
      assert.match(e.evidence[0]?.excerpt ?? '', /INFO: task sh:\d+ blocked for more than \d+ seconds\./);
      inInterval('a hung task', e, made.hung);
    }
    following('the first hung task', ev.indexOf(hung[0]!));
  }
  if (made?.conntrack) {
    // (a node the check ran on before holds that run's events too: this run's are in its interval)
    const full = ev.filter((e) => e.source === 'kernel' && e.kind === 'kernel-conntrack-full' && within(e, made.conntrack!));
    assert.ok(full.length >= 1, `no kernel-conntrack-full while the table was full: ${kindsOf(ev)}`);
    for (const e of full) assert.match(e.evidence[0]?.excerpt ?? '', /nf_conntrack: nf_conntrack: table full, dropping packet/);
    following('the first conntrack table full', ev.indexOf(full[0]!));
  }
  if (made?.fsErrors) {
    const { loop, nullb } = made.fsErrors;
    const want: Array<[string, string | RegExp]> = [
      ['kernel-fs-error', `EXT4-fs error (device ${loop}): trigger_test_error:`],
      ['kernel-fs-read-only', `EXT4-fs (${loop}): Remounting filesystem read-only`],
      ['kernel-io-error', new RegExp(`I/O error, dev ${nullb}, sector \\d+|Buffer I/O error on dev ${nullb}, `)],
    ];
    const firsts = want.map(([kind, text]) => {
      const has = (e: TlEvent) => e.evidence.some((x) => (typeof text === 'string' ? (x.excerpt ?? '').includes(text) : text.test(x.excerpt ?? '')));
      const i = one(`${kind} (${text}) while the devices were broken`, (e) => e.source === 'kernel' && e.kind === kind && has(e) && within(e, made.fsErrors!));
      assert.ok(Number.isInteger(ev[i]!.evidence[0]?.seq), JSON.stringify(ev[i]!.evidence));
      return i;
    });
    // ext4's error, then its remount read-only; the disk's errors after both
    assert.ok(firsts[0]! < firsts[1]! && firsts[1]! < firsts[2]!, `fs error ${firsts[0]}, read-only ${firsts[1]}, I/O error ${firsts[2]}`);
    following('the fs error', firsts[0]!);
  }
  if (restart) {
    const unit = (kind: string) => (e: TlEvent) =>
      e.source === 'journal' && e.kind === kind && e.summary.startsWith('systemd: ') && e.summary.includes('containerd.service') && usOf(e.time) / 1000 - offsetMs >= restart.from - tolMs;
    const stopped = one('containerd.service stopped by the restart', unit('unit-stopped'));
    const startedAgain = one('containerd.service started again', unit('unit-started'));
    assert.ok(stopped < startedAgain, `stopped ${ev[stopped]!.time}, started ${ev[startedAgain]!.time}`);
    for (const i of [stopped, startedAgain]) {
      inInterval(ev[i]!.kind, ev[i]!, restart);
      assert.match(ev[i]!.evidence[0]?.cursor ?? '', /^s=[0-9a-f]{32};/, JSON.stringify(ev[i]!.evidence));
    }
    following("containerd's stop", stopped);
  }
  log(`timeline, in order: ${order.map(([w, i]) => `${ev[i]!.time} ${w}`).join(' < ') || '(nothing made)'}`);

  if (made?.oom) {
    // pod= by UID: the OOM-killed pod's events only, its kill included, the same as the whole answer's
    const { podUid, containerId } = made.oom;
    const byUid = (await get200(`/v1/timeline?since=${sinceMin}m&pod=${podUid}`, 180_000)).body as TimelineOut;
    for (const e of byUid.events) assert.equal(e.pod?.uid, podUid, JSON.stringify(e));
    assert.ok(byUid.events.some((e) => e.kind === 'oom-kill' && e.container?.id === containerId), kindsOf(byUid.events));
    // format=text: one aligned line per event; pod= by namespace/name
    const txt = await get200(`/v1/timeline?since=${sinceMin}m&pod=${made.namespace}/oom-victim&format=text`, 180_000);
    const lines = txt.text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.match(lines[0] ?? '', /^TIME\s+SOURCE\s+POD\s+CONTAINER\s+WHAT\s*$/);
    assert.ok(
      lines.some((l) => new RegExp(`^\\S+Z\\s+oom\\s+${made.namespace}/oom-victim\\s+hog\\s+oom-kill: dd \\(pid \\d+\\) killed by the OOM killer at its limit of 32 MiB$`).test(l)),
      txt.text.slice(0, 2000),
    );
    log(`timeline text (pod=${made.namespace}/oom-victim):\n${txt.text.trim()}`);
  }
  const bad = await get('/v1/timeline?since=yesterday');
  assert.equal(bad.status, 400, bad.text.slice(0, 400));
  assert.match(bad.text, /since/, bad.text.slice(0, 400));
});

// ---- the kernel's ring, as a fixture ----------------------------------------------------
const KMSG_HEADER = [
  '# Real /dev/kmsg records (PRI,SEQ,TS_USEC,FLAGS;text, dictionary lines after a space),',
  '# CAPTURED, not built: printed by Linux {uname} in the dev cluster\'s node VM',
  '# (the {suite} guest under qemu TCG, containerd, cgroup v2, the real kubelet) on {date}',
  '# and read back with `timeout 3 cat /dev/kmsg` (test/e2e/guest/faults.sh kmsg) by',
  '# test/e2e/cluster/host-check.ts, run by scripts/cluster/workload-check.sh with NODETRUTH_E2E_WRITE_KMSG=1.',
];

function writeKmsg(name: string, records: KmsgRecord[], what: string[]): void {
  const uname = readFileSync(join(SHARE, 'uname.txt'), 'utf8').trim();
  const release = uname.split(/\s+/)[0]!;
  assert.match(release, /^[\w.+-]+$/, `uname -r: ${release}`);
  const header = KMSG_HEADER.map((l) => l.replace('{uname}', uname).replace('{suite}', NODE.suite).replace('{date}', new Date().toISOString().slice(0, 10)));
  const file = join(projectRoot, 'test', 'fixtures', 'kmsg', name.replace('{release}', release));
  writeFileSync(file, [...header, ...what].join('\n') + '\n' + records.map(formatKmsgRecord).join('\n') + '\n');
  log(`wrote ${file}`);
}

test('kernel capture: the ring as /dev/kmsg gives it, scanned by the kernel problem table; the faults\' records found', async () => {
  log(await guest('sh /nodetruth/test/e2e/guest/faults.sh kmsg', 60));
  const records = splitKmsgText(readFileSync(join(SHARE, 'kmsg.txt'), 'utf8'));
  assert.ok(records.length > 100, `${records.length} records read from /dev/kmsg`);
  const scan = await scanKernelProblems(records);
  log(`kernel capture: ${records.length} records; problems ${JSON.stringify(scan.counts)}`);
  if (made?.hung) assert.ok((scan.counts['kernel-hung-task'] ?? 0) >= 1, JSON.stringify(scan.counts));
  if (made?.conntrack) assert.ok((scan.counts['kernel-conntrack-full'] ?? 0) >= 1, JSON.stringify(scan.counts));
  if (made?.fsErrors) for (const id of ['kernel-fs-read-only', 'kernel-fs-error', 'kernel-io-error']) assert.ok((scan.counts[id] ?? 0) >= 1, JSON.stringify(scan.counts));
  if (process.env.NODETRUTH_E2E_WRITE_KMSG !== '1') return;
  assert.ok(made?.oom && made.fsErrors, 'the fixtures are written from a run that made the OOM kill and the fs errors');
  const fsFrom = records.findLastIndex((r) => r.text.startsWith(`EXT4-fs (${made.fsErrors!.loop}): mounted filesystem`));
  const oomFrom = records.findIndex((r) => r.text.includes('invoked oom-killer'));
  assert.ok(oomFrom >= 0 && fsFrom > oomFrom, `the first OOM report at ${oomFrom}, the mount of ${made.fsErrors.loop} at ${fsFrom}`);
  const { loop, nullb } = made.fsErrors;
  // the main capture: the first OOM report up to the fs errors, which are kept apart (made last)
  writeKmsg('captured-{release}.kmsg', records.slice(oomFrom, fsFrom), [
    `# Kept: record ${records[oomFrom]!.seq} (the first OOM report) up to the mount of ${loop}.`,
    '# What made them (test/e2e/cluster/workloads/*.yaml, test/e2e/guest/faults.sh):',
    '#   OOM report     the oom-victim pod: dd bs=64M under a 32 MiB memory limit (memcg OOM, systemd cgroup driver)',
    '#   hung tasks     the frozen-writer pod\'s four shell writers on a loop-mounted ext4 frozen with fsfreeze,',
    '#                  kernel.hung_task_timeout_secs=4',
    '#   table full     conntrack-fill: nf_conntrack_max=100 and more held loopback connections than that',
  ]);
  writeKmsg('captured-{release}-fs.kmsg', records.slice(fsFrom), [
    `# Kept: record ${records[fsFrom]!.seq} (the mount of ${loop}) to the end.`,
    '# What made them (test/e2e/guest/faults.sh):',
    `#   fs error       rofs: a 16 MiB ext4 on ${loop}, mounted -o errors=remount-ro, then`,
    `#                  echo "e2e: error made by the harness" > /sys/fs/ext4/${loop}/trigger_fs_error (ext4_error)`,
    `#   read-only      the same error: ext4 aborts the journal and remounts ${loop} read-only`,
    `#   I/O errors     ioerr: a null_blk disk ${nullb} (configfs) with bad blocks 0-127`,
    '#   taint C        staging-taint: modprobe rts5208 (a staging driver, no hardware), then rmmod',
  ]);
});

// ---- a bundle of the node, as an example --------------------------------------------------
test('bundle: GET /v1/bundle is a bundle the reader accepts, holding the OOM kill, the throttled spinner and the crash loop', { skip: noWorkloads, timeout: 600_000 }, async () => {
  const t0 = Date.now();
  const res = await fetch(`${BASE}/v1/bundle?since=1h&maxSize=16MiB`, { signal: AbortSignal.timeout(540_000) });
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, `GET /v1/bundle answered ${res.status}: ${body.subarray(0, 800).toString('utf8')}`);
  const dir = mkdtempSync(join(tmpdir(), 'nodetruth-host-bundle-'));
  try {
    const file = join(dir, 'node-vm.tar.gz');
    writeFileSync(file, body);
    const b = await readBundle(file); // the reader refuses anything hostile or malformed
    const answer = (u: string) => {
      const a = b.routes.get(routeKey(u));
      assert.ok(a, `the bundle has no answer for ${u}`);
      assert.equal(a.status, 200, `${u} stored as ${a.status}: ${a.body.subarray(0, 400).toString('utf8')}`);
      return JSON.parse(a.body.toString('utf8'));
    };
    assert.ok(itemsOf(answer('/v1/oom'), 'kills').some((k: { containerId: string | null }) => k.containerId === made!.oom?.containerId), 'the OOM kill of the hog');
    // the spinner's pod, not its first container ID: a restart before the capture gives it a new one
    const throttling = answer('/v1/throttling?window=1s');
    const throttled: { containerId: string; podUid: string; throttledPeriods: number }[] = itemsOf(throttling);
    assert.ok(
      throttled.some((t) => t.podUid === made!.spinner?.podUid),
      `the spinner (pod ${made!.spinner?.podUid}, container ${made!.spinner?.containerId}) is not among the throttling answer's ${throttled.length} containers: ` +
        JSON.stringify({ windowMs: throttling.windowMs, warnings: throttling.warnings, items: throttled.map((t) => [t.podUid, t.containerId.slice(0, 12), t.throttledPeriods]) }),
    );
    // kubelet keeps one dead attempt: its script's exit 1, or the runtime's own non-zero code for
    // an attempt whose start the containerd restart above failed (seen: exit 2, never started)
    type Row = { podUid: string; attempt: number; state: string; exitCode: number | null; reason: string | null };
    const crash = (itemsOf(answer('/v1/containers')) as Row[]).filter((c) => c.podUid === made!.crashloop?.podUid);
    assert.ok(
      crash.some((c) => c.state === 'CONTAINER_EXITED' && c.attempt >= 1 && c.exitCode !== null && c.exitCode !== 0),
      `crashloop's containers: ${JSON.stringify(crash.map((c) => [c.attempt, c.state, c.exitCode, c.reason]))}`,
    );
    assert.ok(!body.includes('e2e-secret-value-do-not-show'), 'the spinner\'s API_TOKEN value is not in the bundle');
    const failedSections = b.manifest.sections.filter((x) => x.error !== undefined).map((x) => `${x.kind} ${x.name}: ${x.error}`);
    log(`bundle: ${body.length} bytes gzip, ${b.routes.size} answers, ${b.manifest.redaction.total} redacted, captured in ${Date.now() - t0} ms; failed sections: ${failedSections.join('; ') || 'none'}`);
    if (process.env.NODETRUTH_E2E_WRITE_EXAMPLE === '1') {
      mkdirSync(join(projectRoot, 'examples'), { recursive: true });
      writeFileSync(join(projectRoot, 'examples', 'node-vm.tar.gz'), body);
      log(`wrote examples/node-vm.tar.gz (${body.length} bytes)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('shutdown: SIGTERM stops the agent within 15 s', async () => {
  const out = await guest(
    [
      'pid=$(systemctl show -p MainPID --value nodetruth.service)',
      '[ "${pid:-0}" -gt 0 ] || { echo "nodetruth is not running"; exit 1; }',
      'kill -TERM "$pid"',
      'i=0; while [ $i -lt 30 ]; do [ -d /proc/$pid ] || { echo "exited $((i / 2)) s after SIGTERM"; exit 0; }; sleep 0.5; i=$((i + 1)); done',
      'echo "still running 15 s after SIGTERM; its threads:"',
      'for t in /proc/$pid/task/*; do echo "thread $(cat $t/comm) wchan=$(cat $t/wchan) state=$(cut -d" " -f3 $t/stat)"; done',
      'exit 1',
    ].join('\n'),
    60,
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nagent log tail:\n${tailFile(AGENT_LOG, 5)}`);
  });
  log(out.trim());
  started = false;
});
