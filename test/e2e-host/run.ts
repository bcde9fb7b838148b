// End-to-end tests of nodetruth against a real node: a qemu VM with systemd, journald,
// containerd, runc and cgroup v2 (test/e2e-host/README.md). Run with `npm run test:e2e`.
//
// The development machine never runs a container: the guest does. Inside it, a
// kubelet-like driver (guest/cri-driver.ts) creates the pods; nodetruth serves the API;
// every assertion below is made only through nodetruth's HTTP API, from the host.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { routeKey } from '../../src/bundle/format.js';
import { readBundle } from '../../src/bundle/read.js';
import { ensureImage } from './image.js';
import { NodeVm, projectRoot } from '../e2e/vm.js';
import { GiveUp, log, runOk, tailFile, waitFor } from '../e2e/util.js';

// ---- what the driver reports (guest/cri-driver.ts setup) -----------------------------
interface PodOut {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  qos: string;
  cgroupParent: string;
}
interface ContainerOut {
  id: string;
  name: string;
  attempt: number;
  logPath: string;
  pid?: number;
  exitCode?: number;
  reason?: string;
}
interface Setup {
  pods: Record<'spinner' | 'web' | 'crashloop' | 'oom-victim', PodOut>;
  containers: { spin: ContainerOut; ticker: ContainerOut; crash: ContainerOut[]; hog: ContainerOut };
  ms: number;
}

/** nodetruth's CRI deadline in these tests (its default, like crictl's). */
const CRI_TIMEOUT_MS = 2000;
/** What a 504 may take on top of the deadline: TCG runs the agent ~17x slower than the host. */
const DEADLINE_SLACK_MS = 4000;

let vm: NodeVm | undefined;
let setup: Setup;
const timings: Record<string, number> = {};
let failed = false;

// ---- HTTP against the agent through hostfwd ------------------------------------------
interface Reply {
  status: number;
  /** parsed JSON (or the text): checked field by field by the tests */
  body: any;
  text: string;
  ms: number;
}

async function get(path: string, timeoutMs = 30_000): Promise<Reply> {
  if (!vm) throw new Error('no VM');
  const started = Date.now();
  const res = await fetch(vm.baseUrl + path, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body, text, ms: Date.now() - started };
}

/** GET that must answer 200; the failure message carries the body. */
async function get200(path: string, timeoutMs = 30_000): Promise<Reply> {
  const r = await get(path, timeoutMs);
  assert.equal(r.status, 200, `GET ${path} answered ${r.status} in ${r.ms} ms: ${r.text.slice(0, 800)}`);
  return r;
}

/** The list in a response: `items` (the API's convention), or a bare array. */
function itemsOf(body: unknown, key = 'items'): any[] {
  if (Array.isArray(body)) return body;
  const v = (body as Record<string, unknown> | null)?.[key];
  assert.ok(Array.isArray(v), `expected an array in .${key}, got: ${JSON.stringify(body).slice(0, 400)}`);
  return v;
}

const short = (s: string) => s.slice(0, 12);

// ---- the node: build, boot, run the agent and the pods -------------------------------
before(
  async () => {
    try {
      await bringUpNode();
    } catch (err) {
      failed = true;
      throw err;
    }
    readyAt = Date.now();
  },
  { timeout: 20 * 60_000 },
);

let readyAt = 0;

async function bringUpNode(): Promise<void> {
  const t0 = Date.now();
  if (process.env.NODETRUTH_E2E_SKIP_BUILD !== '1') {
    log('building nodetruth (tsc -p tsconfig.build.json)');
    await runOk(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: projectRoot, timeoutMs: 300_000 });
  }
  assert.ok(existsSync(join(projectRoot, 'dist', 'cli.js')), 'dist/cli.js is missing after the build');
  assert.ok(existsSync(join(projectRoot, 'node_modules', 'node', 'bin', 'node')), 'node_modules/node/bin/node (Node 24 for the guest) is missing: run npm ci');
  timings.projectBuildMs = Date.now() - t0;

  const t1 = Date.now();
  const image = await ensureImage();
  timings.imageMs = Date.now() - t1;
  if (image.buildMs) timings.imageBuildMs = image.buildMs;

  vm = new NodeVm({ ...image, suite: 'bookworm' }); // test/e2e's VM runner, with this harness's guest
  installExitHandlers(vm);
  await vm.boot();
  timings.bootMs = vm.bootMs;

  // The agent starts first, so its (slow, TCG) module loading overlaps the driver's work.
  const t2 = Date.now();
  const extra = (process.env.NODETRUTH_E2E_AGENT_ARGS ?? '').split(/\s+/).filter(Boolean).map((a) => `'${a.replaceAll("'", '')}'`);
  log(await vm.sh(`sh /nodetruth/test/e2e-host/guest/start-agent.sh --cri-timeout ${CRI_TIMEOUT_MS / 1000}s ${extra.join(' ')}`, 60));
  const r = await vm.exec(
    'cd /nodetruth && node_modules/node/bin/node test/e2e-host/guest/cri-driver.ts setup > /share/setup.json',
    400,
  );
  log(`cri-driver setup: exit ${r.rc} in ${(r.ms / 1000).toFixed(1)} s\n${r.out.trim()}`);
  assert.equal(r.rc, 0, `the CRI driver failed in the guest:\n${r.out}`);
  setup = JSON.parse(readFileSync(join(vm.shareDir, 'setup.json'), 'utf8')) as Setup;
  timings.criSetupMs = r.ms;

  let lastCheck = Date.now();
  await waitFor('nodetruth /healthz through the relay', 300_000, async () => {
    vm!.assertAlive();
    const h = await get('/healthz', 5000).catch(() => undefined);
    if (h?.status === 200) return true;
    if (Date.now() - lastCheck > 5000) {
      lastCheck = Date.now();
      // a crashed agent is gone at once (--collect): do not wait the full five minutes
      const st = (await vm!.exec('systemctl show -p ActiveState --value nodetruth.service', 30)).out.trim();
      if (st !== 'active' && st !== 'activating') {
        throw new GiveUp(`nodetruth is ${st || 'gone'} in the guest`);
      }
    }
    return undefined;
  }, 1000).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nagent log tail:\n${tailFile(vm!.agentLog, 30)}`);
  });
  // Ready means the runtime answers too: on a starved TCG guest the agent's first CRI
  // calls can outlive the 2 s deadline while containerd is still busy with the driver.
  let early504 = 0;
  await waitFor('nodetruth /v1/runtime to answer 200', 120_000, async () => {
    const r = await get('/v1/runtime', 30_000);
    if (r.status === 200) return true;
    early504++;
    return undefined;
  }, 1000);
  if (early504) log(`/v1/runtime answered ${early504} time(s) with a non-200 status before 200`);
  timings.agentReadyMs = Date.now() - t2;
  log(`nodetruth answers at ${vm.baseUrl} (agent started ${(timings.agentReadyMs / 1000).toFixed(1)} s ago)`);
}

after(async () => {
  if (!vm) return;
  if (readyAt) timings.scenariosMs = Date.now() - readyAt;
  try {
    // Normally the shutdown scenario stopped it already.
    await vm.exec('timeout 20 systemctl stop nodetruth.service || systemctl kill -s KILL nodetruth.service', 40).catch(() => undefined);
    // keep the guest's journal next to the other logs (for a failed run, mostly)
    await vm.exec('journalctl -b --no-pager -o short-precise > /share/journal.txt 2>&1; dmesg > /share/dmesg.txt', 60).catch(() => undefined);
  } finally {
    await vm.stop();
  }
  log(`timings (ms): ${JSON.stringify(timings)}`);
  log(`logs of this run:\n${vm.where()}\n  journal:     ${join(vm.shareDir, 'journal.txt')}`);
  if (failed) log(`agent log tail:\n${tailFile(vm.agentLog, 25)}`);
});

function installExitHandlers(v: NodeVm): void {
  process.once('exit', () => v.killNow());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      v.killNow();
      process.exit(130);
    });
  }
}

/** test() that remembers a failure, so the run ends with the logs' tails. */
function scenario(name: string, fn: () => Promise<void>, timeout = 120_000): void {
  test(name, { timeout }, async () => {
    try {
      await fn();
    } catch (err) {
      failed = true;
      throw err;
    }
  });
}

// ---- scenarios -----------------------------------------------------------------------

scenario('runtime: /v1/runtime shows RuntimeReady true, NetworkReady false (no CNI), systemd cgroup driver', async () => {
  const { body } = await get200('/v1/runtime');
  assert.equal(body.runtimeName, 'containerd');
  const cond = (t: string) => itemsOf(body, 'conditions').find((c: { type: string }) => c.type === t);
  assert.equal(cond('RuntimeReady')?.status, true, JSON.stringify(body.conditions));
  assert.equal(cond('NetworkReady')?.status, false, JSON.stringify(body.conditions));
  assert.ok(cond('NetworkReady')?.reason, 'NetworkReady false carries a reason');
  assert.equal(body.cgroupDriver, 'systemd');
});

scenario('processes: /v1/containers/{id}/processes lists the container\'s real main PID', async () => {
  const ticker = setup.containers.ticker;
  assert.ok(ticker.pid && ticker.pid > 1, `driver reported pid ${ticker.pid}`);
  const { body } = await get200(`/v1/containers/${ticker.id}/processes`);
  const pids = itemsOf(body).map((p: { pid: number }) => p.pid);
  assert.ok(pids.includes(ticker.pid), `pid ${ticker.pid} (from CRI ContainerStatus) not in ${JSON.stringify(pids)}`);
  const main = itemsOf(body).find((p: { pid: number }) => p.pid === ticker.pid);
  assert.equal(main.comm, 'sh');
  // a short id prefix resolves too
  const { body: byPrefix } = await get200(`/v1/containers/${short(ticker.id)}/processes`);
  assert.ok(itemsOf(byPrefix).some((p: { pid: number }) => p.pid === ticker.pid));
});

scenario('namespaces: pid namespace private, net namespace shared with the host (hostNetwork pod)', async () => {
  const { body } = await get200(`/v1/containers/${setup.containers.ticker.id}/namespaces`);
  const ns = (t: string) => itemsOf(body).find((n: { type: string }) => n.type === t);
  assert.equal(ns('pid')?.sharedWith, 'private', JSON.stringify(ns('pid')));
  assert.equal(ns('net')?.sharedWith, 'host', JSON.stringify(ns('net')));
  assert.equal(ns('mnt')?.sharedWith, 'private', JSON.stringify(ns('mnt')));
});

scenario('inspect: /v1/containers/{id} has the main pid and never shows an environment value', async () => {
  const { body, text } = await get200(`/v1/containers/${setup.containers.ticker.id}`);
  assert.equal(body.pid, setup.containers.ticker.pid);
  assert.equal(body.podUid, setup.pods.web.uid);
  assert.ok(!text.includes('e2e-secret-value-do-not-show'), 'the API_TOKEN value leaked into /v1/containers/{id}');
});

scenario('pods: /v1/pods lists the four sandboxes with name, namespace, UID, ready', async () => {
  const { body } = await get200('/v1/pods?namespace=e2e');
  const items = itemsOf(body);
  for (const pod of Object.values(setup.pods)) {
    const p = items.find((x: { id: string }) => x.id === pod.id);
    assert.ok(p, `pod ${pod.name} (${short(pod.id)}) missing from /v1/pods`);
    assert.deepEqual([p.name, p.namespace, p.uid, p.state, p.attempt], [pod.name, 'e2e', pod.uid, 'SANDBOX_READY', 0]);
  }
});

scenario('node: /v1/node reports cgroup v2 with the systemd driver, PSI, and a ready runtime', async () => {
  const { body } = await get200('/v1/node');
  assert.equal(body.cgroup?.version, 'v2', JSON.stringify(body.cgroup));
  assert.ok(body.cgroup.drivers.includes('systemd'), JSON.stringify(body.cgroup));
  for (const k of ['cpu', 'memory', 'io']) assert.ok(body.pressure?.[k]?.some, `PSI ${k}: ${JSON.stringify(body.pressure?.[k])}`);
  assert.equal(body.runtime?.ready, true, JSON.stringify(body.runtime));
});

scenario('crash loop: /v1/containers shows attempts 0-3 of one container, each exited with code 1', async () => {
  const pod = setup.pods.crashloop;
  const { body } = await get200('/v1/containers');
  const mine = itemsOf(body)
    .filter((c: { podUid: string; name: string }) => c.podUid === pod.uid && c.name === 'crash')
    .sort((a: { attempt: number }, b: { attempt: number }) => a.attempt - b.attempt);
  assert.deepEqual(
    mine.map((c: { id: string; attempt: number; state: string; exitCode: number; podId: string }) => ({ id: c.id, attempt: c.attempt, state: c.state, exitCode: c.exitCode, podId: c.podId })),
    setup.containers.crash.map((c) => ({ id: c.id, attempt: c.attempt, state: 'CONTAINER_EXITED', exitCode: 1, podId: pod.id })),
  );
  for (const c of mine) assert.equal(c.reason, 'Error');
  // the restart history of the newest attempt
  const last = setup.containers.crash.at(-1)!;
  const { body: inspect } = await get200(`/v1/containers/${last.id}`);
  assert.deepEqual(
    itemsOf(inspect, 'restarts').map((r: { attempt: number; exitCode: number }) => [r.attempt, r.exitCode]),
    [[0, 1], [1, 1], [2, 1], [3, 1]],
  );
});

scenario('OOM: /v1/oom shows the kernel\'s kill with the pod UID and container ID', async () => {
  const pod = setup.pods['oom-victim'];
  const hog = setup.containers.hog;
  assert.equal(hog.exitCode, 137, `driver saw exit ${hog.exitCode} ${hog.reason}`);
  const { body } = await get200('/v1/oom');
  const kills = itemsOf(body, 'kills');
  const kill = kills.find((k: { containerId: string | null }) => k.containerId === hog.id);
  assert.ok(kill, `no kill of container ${hog.id} in ${JSON.stringify(kills).slice(0, 1500)}`);
  assert.equal(kill.podUid, pod.uid);
  assert.equal(kill.qos, 'burstable');
  // what the kernel said: dd killed at the container's own 32 MiB limit, read from /dev/kmsg
  assert.equal(kill.process, 'dd');
  assert.equal(kill.constraint, 'CONSTRAINT_MEMCG');
  assert.equal(kill.global, false);
  assert.equal(kill.memcgLimitKb, 32 * 1024);
  assert.equal(kill.evidence?.source, 'kmsg', JSON.stringify(kill.evidence));
  assert.ok(Number.isInteger(kill.evidence.firstSeq), JSON.stringify(kill.evidence));
});

scenario('OOM: /v1/cgroups shows the pod\'s oomKill >= 1 after the container\'s cgroup is gone', async () => {
  const pod = setup.pods['oom-victim'];
  const { body } = await get200('/v1/cgroups');
  const items = itemsOf(body);
  assert.ok(!items.some((r: { containerId: string | null }) => r.containerId === setup.containers.hog.id), 'the OOM-killed container still has a cgroup');
  const podCg = items.find((r: { kind: string; podUid: string }) => r.kind === 'pod' && r.podUid === pod.uid);
  assert.ok(podCg, `no pod cgroup for ${pod.uid}`);
  assert.equal(podCg.qos, 'burstable');
  assert.ok(podCg.memory?.events?.oomKill >= 1, `pod memory.events: ${JSON.stringify(podCg.memory?.events)}`);
});

scenario('kernel: /v1/kernel has the oom-kill record naming the container\'s cgroup, with a kmsg sequence number', async () => {
  const hog = setup.containers.hog;
  const { body } = await get200('/v1/kernel?pattern=oom-kill');
  const recs = itemsOf(body, 'records').filter((r: { text: string }) => r.text.includes(hog.id));
  assert.ok(recs.length >= 1, `no oom-kill record mentions ${hog.id}: ${JSON.stringify(body).slice(0, 600)}`);
  assert.ok(Number.isInteger(recs[0].seq), JSON.stringify(recs[0]));
});

scenario('throttling: the spinning container under a 0.1-core quota ranks first, throttled share > 0.5', async () => {
  const { body } = await get200('/v1/throttling?window=5s', 60_000);
  const items = itemsOf(body);
  assert.ok(items.length > 0, 'no throttling entries');
  assert.equal(items[0].containerId, setup.containers.spin.id, `first: ${JSON.stringify(items[0])}`);
  assert.ok(items[0].throttledShare > 0.5, `throttledShare ${items[0].throttledShare}`);
  assert.equal(items[0].podUid, setup.pods.spinner.uid);
});

scenario('metrics: /metrics has cAdvisor-named series with pod_uid for the throttled and the OOM-killed pods', async () => {
  const { text } = await get200('/metrics');
  const value = (name: string, podUid: string): number[] =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name + '{') && l.includes(`pod_uid="${podUid}"`))
      .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
  const throttled = value('container_cpu_cfs_throttled_periods_total', setup.pods.spinner.uid);
  assert.ok(throttled.some((v) => v > 0), `container_cpu_cfs_throttled_periods_total for the spinner: ${JSON.stringify(throttled)}`);
  const ooms = value('container_oom_events_total', setup.pods['oom-victim'].uid);
  assert.ok(ooms.some((v) => v >= 1), `container_oom_events_total for oom-victim: ${JSON.stringify(ooms)}`);
  assert.match(text, /^nodetruth_network_ready(\{[^}]*\})? 0$/m);
  assert.match(text, /^nodetruth_runtime_ready(\{[^}]*\})? 1$/m);
});

scenario('journal: /v1/logs?query=containerd returns real journald entries', async () => {
  const { body } = await get200('/v1/logs?query=containerd&tailLines=50');
  const entries = itemsOf(body, 'records');
  assert.ok(entries.length > 0, 'no journal entries for containerd');
  for (const e of entries) assert.equal(e.unit, 'containerd.service', JSON.stringify(e));
  assert.ok(entries.every((e: { cursor: string }) => typeof e.cursor === 'string' && e.cursor.startsWith('s=')), 'entries carry journald cursors');
});

scenario('container logs: /v1/containers/{id}/logs reads the CRI log file', async () => {
  const { text } = await get200(`/v1/containers/${setup.containers.ticker.id}/logs?tailLines=5`);
  assert.match(text, /tick \d+/);
  const crash = setup.containers.crash.at(-1)!;
  const { text: crashText } = await get200(`/v1/containers/${crash.id}/logs`);
  assert.match(crashText, /starting attempt 3/);
  assert.match(crashText, /fatal: missing config/);
});

// issue 14: the node in the middle of its scenarios, as a bundle; NODETRUTH_E2E_WRITE_EXAMPLE=1 keeps it
// as examples/node-vm.tar.gz (the example scripts/serve-local.sh serves on a machine that is no node)
scenario('bundle: GET /v1/bundle is a bundle the reader accepts, holding the crash loop, the OOM kill, the throttled container and NetworkReady false', async () => {
  if (!vm) throw new Error('no VM');
  const t0 = Date.now();
  const res = await fetch(`${vm.baseUrl}/v1/bundle?since=1h&maxSize=16MiB`, { signal: AbortSignal.timeout(540_000) });
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, `GET /v1/bundle answered ${res.status}: ${body.subarray(0, 800).toString('utf8')}`);
  const ms = Date.now() - t0;
  const dir = mkdtempSync(join(tmpdir(), 'nodetruth-e2e-bundle-'));
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
    const network = itemsOf(answer('/v1/runtime'), 'conditions').find((c: { type: string }) => c.type === 'NetworkReady');
    assert.equal(network?.status, false, 'NetworkReady false, as captured');
    const crash = itemsOf(answer('/v1/containers')).filter((c: { podUid: string; name: string }) => c.podUid === setup.pods.crashloop.uid && c.name === 'crash');
    assert.ok(crash.length >= 4 && crash.every((c: { exitCode: number }) => c.exitCode === 1), `crash loop attempts: ${JSON.stringify(crash.map((c: { attempt: number; exitCode: number }) => [c.attempt, c.exitCode]))}`);
    assert.ok(itemsOf(answer('/v1/oom'), 'kills').some((k: { containerId: string | null }) => k.containerId === setup.containers.hog.id), 'the OOM kill of the hog');
    const throttled = itemsOf(answer('/v1/throttling?window=1s'));
    assert.equal(throttled[0]?.containerId, setup.containers.spin.id, `throttling first: ${JSON.stringify(throttled[0])}`);
    assert.equal(answer(`/v1/containers/${setup.containers.ticker.id}`).id, setup.containers.ticker.id, 'per-container answers');
    assert.ok(!body.includes('e2e-secret-value-do-not-show'), 'the API_TOKEN value is not in the bundle');
    const failedSections = b.manifest.sections.filter((x) => x.error !== undefined).map((x) => `${x.kind} ${x.name}: ${x.error}`);
    log(`bundle: ${body.length} bytes gzip, ${b.manifest.bytes} uncompressed, ${b.routes.size} answers, ${b.manifest.redaction.total} redacted, trimmed [${b.manifest.trimmed.join(',')}], captured in ${ms} ms; failed sections: ${failedSections.join('; ') || 'none'}`);
    if (process.env.NODETRUTH_E2E_WRITE_EXAMPLE === '1') {
      mkdirSync(join(projectRoot, 'examples'), { recursive: true });
      writeFileSync(join(projectRoot, 'examples', 'node-vm.tar.gz'), body);
      log(`wrote examples/node-vm.tar.gz (${body.length} bytes)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 600_000);

test('wedged runtime: containerd frozen with SIGSTOP (in the guest)', { timeout: 240_000 }, async (t) => {
  const v = vm!;
  const ticker = setup.containers.ticker;
  const sub = (name: string, fn: () => Promise<void>) =>
    t.test(name, async () => {
      try {
        await fn();
      } catch (err) {
        failed = true;
        throw err;
      }
    });
  await v.sh('kill -STOP "$(systemctl show -p MainPID --value containerd.service)"', 30);
  try {
    for (const path of ['/v1/runtime', '/v1/containers', '/v1/pods', `/v1/containers/${ticker.id}`]) {
      await sub(`GET ${path.replace(ticker.id, '{id}')} answers 504 within the CRI deadline`, async () => {
        const r = await get(path, 60_000);
        assert.equal(r.status, 504, `GET ${path} while containerd is stopped: ${r.status} ${r.text.slice(0, 300)}`);
        assert.ok(r.ms < CRI_TIMEOUT_MS + DEADLINE_SLACK_MS, `GET ${path} took ${r.ms} ms (deadline ${CRI_TIMEOUT_MS} ms)`);
        assert.match(String(r.body?.type ?? ''), /./, 'a problem+json body');
        log(`wedged: ${path} -> 504 in ${r.ms} ms`);
      });
    }
    await sub('GET /v1/cgroups still answers 200', async () => {
      const { body } = await get200('/v1/cgroups');
      assert.ok(itemsOf(body).some((r: { podUid: string }) => r.podUid === setup.pods.web.uid));
    });
    await sub('GET /v1/logs?query=containerd still answers 200', async () => {
      const { body } = await get200('/v1/logs?query=containerd&tailLines=10');
      assert.ok(itemsOf(body, 'records').length > 0);
    });
    await sub('GET /v1/containers/{id}/logs still answers 200 (from the log file)', async () => {
      const { text } = await get200(`/v1/containers/${ticker.id}/logs?tailLines=3`);
      assert.match(text, /tick \d+/);
    });
    await sub('GET /v1/containers/{id}/processes still answers 200 (from the cgroup)', async () => {
      const { body } = await get200(`/v1/containers/${ticker.id}/processes`);
      assert.ok(itemsOf(body).some((p: { pid: number }) => p.pid === ticker.pid));
    });
  } finally {
    await v.sh('kill -CONT "$(systemctl show -p MainPID --value containerd.service)"', 30);
  }
  await sub('after SIGCONT the runtime routes answer 200 again', async () => {
    const started = Date.now();
    await waitFor('/v1/runtime to answer 200 after SIGCONT', 30_000, async () => ((await get('/v1/runtime', 10_000)).status === 200 ? true : undefined), 500);
    await get200('/v1/containers');
    await get200('/v1/pods');
    log(`runtime routes 200 again ${Date.now() - started} ms after SIGCONT`);
  });
});

scenario('shutdown: SIGTERM stops the agent within 15 s, after everything above', async () => {
  const r = await vm!.exec(
    [
      'pid=$(systemctl show -p MainPID --value nodetruth.service)',
      '[ "${pid:-0}" -gt 0 ] || { echo "nodetruth is not running"; exit 1; }',
      'kill -TERM "$pid"',
      'i=0; while [ $i -lt 30 ]; do [ -d /proc/$pid ] || { echo "exited $((i / 2)) s after SIGTERM"; exit 0; }; sleep 0.5; i=$((i + 1)); done',
      'echo "still running 15 s after SIGTERM; its open files and threads:"',
      'ls -l /proc/$pid/fd | sed -n "s/.* -> //p" | sort | uniq -c',
      'for t in /proc/$pid/task/*; do echo "thread $(cat $t/comm) wchan=$(cat $t/wchan) state=$(cut -d" " -f3 $t/stat)"; done',
      'for t in /proc/$pid/task/*; do [ "$(cut -d" " -f3 $t/stat)" = D ] && { echo "kernel stack of $(cat $t/comm):"; cat $t/stack; }; done',
      'ps -o pid,args --ppid "$pid"',
      'exit 1',
    ].join('\n'),
    60,
  );
  log(r.out.trim());
  assert.equal(r.rc, 0, `${r.out}\nagent log tail:\n${tailFile(vm!.agentLog, 5)}`);
});
