/**
 * Two builds of the agent side by side on one FAKE node (pods × 4 containers, the FAKE CRI in
 * its own process), each against the same baseline as bench/all.ts, in the same run:
 * - /v1/containers vs raw grpc-js ListContainers + ListPodSandbox + ContainerStatus of each,
 *   16 at a time;
 * - /v1/cgroups vs a readFileSync loop over the same cgroups' STAT_FILES;
 * - /metrics vs a readFileSync loop over the cgroups' METRIC_CGROUP_FILES and every
 *   /proc/<pid>/stat (bench/all.ts's baseline).
 * Each round times the baseline and every agent once, the order rotating. The agents run with
 * `--max-age 0`, so every request is a reading of its own (what a request costs, not a shared answer).
 *
 *   NODETRUTH_AB="before=/tmp/a/dist/nodetruth.mjs,after=/tmp/b/dist/nodetruth.mjs" \
 *     npx tsx bench/route-ab.ts [containers=1000] [rounds=11] [routes=/v1/containers,/v1/cgroups]
 *
 * A build may carry node flags for its agent: `name=path/to/nodetruth.mjs+--flag+--other`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { criServices } from '../src/readers/cri/proto.js';
import { mapLimit } from '../src/lib/concurrency.js';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, startFakeCriProcess } from '../test/helpers/agent-process.js';
import { fileFloors, machine, median, report, round, timeIt } from './lib.js';

/** utime + stime of a process, in ms (clock ticks of 10 ms) */
const cpuMs = (pid: number) => {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const builds = (process.env.NODETRUTH_AB ?? '').split(',').filter(Boolean).map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)] as [string, string]);
if (builds.length === 0) throw new Error('NODETRUTH_AB="name=path/to/nodetruth.mjs,..." is required');
const [containers = 1000, rounds = 11] = process.argv.slice(2, 4).map(Number);
const routes = (process.argv[4] ?? '/v1/containers,/v1/cgroups').split(',');

const host = await makeFakeScaleHost({ pods: Math.ceil(containers / 4), perPod: 4, journal: false });
const cri = await startFakeCriProcess(host.options);
const flags = ['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--cri-timeout', '10s', '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'warn', '--max-age', '0'];
const children: ChildProcess[] = [];
const { RuntimeService } = criServices();
const raw = new RuntimeService(`unix:${cri.endpoint.replace(/^unix:\/\//, '')}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 });
try {
  const agents: { name: string; url: string; pid: number }[] = [];
  for (const [name, spec] of builds) {
    // `path+--node-flag+...`: node flags for this agent (before the bundle)
    const [bundle, ...nodeFlags] = spec.split('+');
    const port = await freePort();
    const child = spawn(process.execPath, [...nodeFlags, bundle!, 'serve', '--listen', `127.0.0.1:${port}`, ...flags], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(child);
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/healthz`).catch(() => null))?.status === 200) break;
      if (i > 600 || child.exitCode !== null) throw new Error(`${name}: not ready`);
      await new Promise((r) => setTimeout(r, 50));
    }
    agents.push({ name, url, pid: child.pid! });
  }
  const call = <T>(method: string, req: object) =>
    new Promise<T>((resolve, reject) =>
      (raw as unknown as Record<string, Function>)[method]!.call(raw, req, { deadline: Date.now() + 30_000 }, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
    );
  const floors = await fileFloors(host.root);
  const baselines: Record<string, () => Promise<unknown>> = {
    '/v1/containers': async () => {
      const [list] = await Promise.all([call<{ containers: { id: string }[] }>('ListContainers', {}), call('ListPodSandbox', {})]);
      await mapLimit(list.containers, 16, (c) => call('ContainerStatus', { containerId: c.id, verbose: false }));
    },
    '/v1/cgroups': async () => floors.cgroupsFloor(),
    '/metrics': async () => floors.metricsFloor(),
  };
  const bodies = new Map<string, string>();
  const out: Record<string, unknown> = {};
  for (const route of routes) {
    const runners: { name: string; pid: number; fn: () => Promise<unknown> }[] = [
      { name: 'baseline', pid: process.pid, fn: baselines[route]! },
      ...agents.map((a) => ({
        name: a.name,
        pid: a.pid,
        fn: async () => {
          const res = await fetch(`${a.url}${route}`);
          const text = await res.text();
          if (res.status !== 200) throw new Error(`${a.name} ${route}: ${res.status} ${text.slice(0, 200)}`);
          bodies.set(a.name, text);
        },
      })),
    ];
    for (let i = 0; i < 2; i++) for (const r of runners) await r.fn(); // warm-up
    const ms = new Map<string, number[]>(runners.map((r) => [r.name, []]));
    const cpu = new Map<string, number[]>(runners.map((r) => [r.name, []]));
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < runners.length; k++) {
        const r = runners[(i + k) % runners.length]!;
        await new Promise((res) => setTimeout(res, 100));
        const c0 = cpuMs(r.pid);
        ms.get(r.name)!.push((await timeIt(r.fn)).ms);
        cpu.get(r.name)!.push(cpuMs(r.pid) - c0);
      }
    }
    const base = median(ms.get('baseline')!);
    // the answers without their time stamps: the builds must say the same
    const strip = (s: string) => s.replace(/"observedAt":"[^"]*"/g, '').replace(/"(startedAt|finishedAt|createdAt)":"[^"]*"/g, '');
    const texts = agents.map((a) => strip(bodies.get(a.name)!));
    out[route] = {
      baselineMs: round(base),
      // CPU of the process that answered (the baseline's: this one, its own share of the grpc work)
      baselineCpuMs: round(median(cpu.get('baseline')!)),
      agents: Object.fromEntries(agents.map((a) => [a.name, { ms: round(median(ms.get(a.name)!)), ratio: round(median(ms.get(a.name)!) / base), cpuMs: round(median(cpu.get(a.name)!)) }])),
      sameAnswer: texts.every((t) => t === texts[0]),
      // the same with every runtime timestamp kept (the FAKE CRI serves both agents the same ones)
      sameAnswerWithTimes: agents.every((a) => bodies.get(a.name)!.replace(/"observedAt":"[^"]*"/g, '') === bodies.get(agents[0]!.name)!.replace(/"observedAt":"[^"]*"/g, '')),
      bytes: bodies.get(agents[0]!.name)!.length,
    };
  }
  report('route-ab', `npx tsx bench/route-ab.ts ${containers} ${rounds} ${routes.join(',')}`, { builds: Object.fromEntries(builds), containers: host.node.containers.length, rounds, loadAfter: machine().load, ...out });
} finally {
  raw.close();
  for (const c of children) c.kill('SIGTERM');
  await cri.stop();
  host.cleanup();
}
