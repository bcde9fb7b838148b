/**
 * A real scrape: Debian's prometheus binary, with a temp config and storage
 * dir, scrapes the agent on loopback; its HTTP API then returns our series.
 * Kept short (1 s scrape interval); prometheus is killed by its PID.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { POD_UID, realNode } from '../fixtures/node-tree.js';
import { freePort } from '../helpers/agent-process.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const PROMETHEUS = '/usr/bin/prometheus';


if (!existsSync(PROMETHEUS)) {
  t.plan(0, 'skipped: prometheus not installed (apt-get install prometheus)');
} else {
  const node = realNode('systemd');
  const cri = new FakeCriServer(capturedRuntime());
  await cri.start();
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz']);
  await agent.app.listen({ host: '127.0.0.1', port: 0 });
  const agentPort = (agent.app.server.address() as AddressInfo).port;

  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-prom-'));
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: nodetruth\n    static_configs:\n      - targets: ['127.0.0.1:${agentPort}']\n`,
  );
  const promPort = await freePort();
  const prom = spawn(
    PROMETHEUS,
    [`--config.file=${dir}/prometheus.yml`, `--storage.tsdb.path=${dir}/data`, `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let promLog = '';
  prom.stderr!.on('data', (d) => (promLog += d));
  const promExited = new Promise<void>((r) => prom.once('exit', () => r()));
  t.teardown(async () => {
    if (prom.exitCode === null && prom.signalCode === null) process.kill(prom.pid!, 'SIGTERM');
    const kill = setTimeout(() => prom.exitCode === null && process.kill(prom.pid!, 'SIGKILL'), 5000);
    await promExited;
    clearTimeout(kill);
    await agent.close();
    await cri.stop();
    node.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = `http://127.0.0.1:${promPort}/api/v1`;
  async function query(q: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
    const r = await fetch(`${api}/query?query=${encodeURIComponent(q)}`);
    const j = (await r.json()) as { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    return j.status === 'success' ? j.data.result : [];
  }

  t.test('prometheus scrapes /metrics and answers for our series', async (t) => {
    const deadline = Date.now() + 30_000;
    let oom: Awaited<ReturnType<typeof query>> = [];
    for (;;) {
      try {
        oom = await query(`container_oom_events_total{pod_uid="${POD_UID}",container=""}`);
      } catch {
        /* not listening yet */
      }
      if (oom.length > 0 || Date.now() > deadline || prom.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    t.equal(oom.length, 1, `series scraped (prometheus log: ${promLog.slice(0, 500)})`);
    t.equal(oom[0]?.value[1], '2');
    t.equal(oom[0]?.metric.pod, 'lab');
    t.equal(oom[0]?.metric.job, 'nodetruth');
    const up = await query('up{job="nodetruth"}');
    t.equal(up[0]?.value[1], '1', 'target up');
    const throttled = await query('container_cpu_cfs_throttled_periods_total{container="spin"}');
    t.equal(throttled[0]?.value[1], '168');
    const targets = (await (await fetch(`${api}/targets`)).json()) as { data: { activeTargets: Array<{ health: string; lastError: string }> } };
    t.same(targets.data.activeTargets.map((a) => [a.health, a.lastError]), [['up', '']], 'no scrape errors');
  });
}
