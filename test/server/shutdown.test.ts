/**
 * Graceful shutdown of a real `nodetruth serve` process: on SIGTERM an
 * in-flight request still gets its answer, then the process exits 0 with its
 * gRPC channel closed (nothing keeps the event loop alive).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { FakeCriServer, generateFakeNode } from '../helpers/fake-cri.js';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

t.test('SIGTERM lets in-flight requests finish, then exits 0', async (t) => {
  const fake = new FakeCriServer(generateFakeNode(2, 2));
  await fake.start();
  t.teardown(() => fake.stop());
  const port = 17000 + Math.floor(Math.random() * 2000);
  // --cri-timeout: room for the slow runtime's 800 ms on a loaded machine, below the 5 s shutdown grace
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', '/', '--cri-endpoint', fake.endpoint, '--cri-timeout', '4s'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: compiling TypeScript on a loaded 2-core machine can take seconds.
  for (let i = 0; i < 600 && !out.includes('nodetruth serving') && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
  if (!t.match(out, /nodetruth serving/)) t.comment(err);

  fake.delayMs = 800; // the runtime is slow: the request is in flight when SIGTERM arrives
  const asked = fake.calls.Version ?? 0;
  const inflight = fetch(`http://127.0.0.1:${port}/v1/runtime`);
  // in flight: the agent has asked the runtime, whose answer comes 800 ms after the call by a
  // timer of this process, later than this loop's next 5 ms check. A fixed pause could end before
  // the request reached the agent on a loaded machine, and SIGTERM would then refuse it.
  for (let i = 0; i < 3000 && (fake.calls.Version ?? 0) === asked; i++) await new Promise((r) => setTimeout(r, 5));
  t.ok((fake.calls.Version ?? 0) > asked, 'the request reached the runtime before SIGTERM');
  child.kill('SIGTERM');
  const res = await inflight;
  t.equal(res.status, 200, 'the in-flight request completes');
  t.equal(((await res.json()) as { runtimeName: string }).runtimeName, 'fake-cri');
  t.equal(await exited, 0, 'exits 0 on its own: no open handle left (the gRPC channel is closed)');
  t.match(out, /shutting down/);
  t.match(out, /"msg":"stopped"/);
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'no longer listening');
});

t.test('SIGTERM under load: a burst of slow requests and open follows; the agent exits 0 and leaves no child', async (t) => {
  const { makeJournalHost } = await import('../fixtures/journal/host.js');
  const { kmsgFixture } = await import('../fixtures/kmsg/oom-reports.js');
  const { startAgentProcess, childrenOf } = await import('../helpers/agent-process.js');
  const http = await import('node:http');
  const host = await makeJournalHost();
  t.teardown(host.cleanup);
  const fake = new FakeCriServer(generateFakeNode(2, 2));
  await fake.start();
  t.teardown(() => fake.stop());
  const agent = await startAgentProcess(['--host-root', host.root, '--cri-endpoint', fake.endpoint, '--cri-timeout', '30s', '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg')]);
  t.teardown(() => agent.stop('SIGKILL'));
  const port = Number(new URL(agent.url).port);
  fake.delayMs = 20_000; // every runtime call outlives the shutdown grace: they must be cut
  const answers: Promise<number | string>[] = [];
  const sockets: import('node:http').ClientRequest[] = [];
  const open = (p: string) =>
    answers.push(
      new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
          res.resume();
          res.on('close', () => resolve(res.statusCode!));
        });
        req.on('error', (e) => resolve(String((e as NodeJS.ErrnoException).code)));
        sockets.push(req);
      }),
    );
  for (let i = 0; i < 30; i++) open(i % 3 === 0 ? '/v1/containers' : '/v1/runtime');
  for (const p of ['/v1/logs?query=kubelet&follow=true&tailLines=1', '/v1/logs?follow=true&tailLines=0', '/v1/kernel?follow=true', '/v1/kernel?follow=true&tailLines=2']) open(p);
  // the follows' journalctl children are running
  const guard = Date.now() + 15_000;
  let journalctls: number[] = [];
  while (Date.now() < guard && (journalctls = childrenOf(agent.pid).filter((c) => c.comm === 'journalctl').map((c) => c.pid)).length < 2) await new Promise((r) => setTimeout(r, 20));
  t.ok(journalctls.length >= 2, `journalctl children while following: ${journalctls.length}`);
  await new Promise((r) => setTimeout(r, 300)); // the burst is in flight
  const started = performance.now();
  const code = await agent.stop('SIGTERM'); // SIGKILL after 15 s: a hang guard only
  const ms = performance.now() - started;
  t.comment(`SIGTERM to exit under load: ${Math.round(ms)} ms`);
  t.equal(code, 0, 'exited on its own with 0');
  t.notOk(agent.lines.some((l) => /something still holds the process/.test(l)), 'no forced exit');
  const statuses = await Promise.all(answers);
  t.ok(statuses.every((s) => s === 200 || s === 503 || s === 'ECONNRESET'), `every client got an answer or a closed connection: ${[...new Set(statuses)].join(', ')}`);
  t.ok(statuses.filter((s) => s === 503).length >= 20, 'the cut requests answered 503 for themselves');
  const alive = journalctls.filter((pid) => {
    try {
      return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  });
  t.same(alive, [], 'no journalctl left behind');
  const audit = agent.lines
    .filter((l) => l.includes('"audit"'))
    .map((l) => JSON.parse(l).audit as Record<string, unknown>)
    .filter((a) => a.route !== '/healthz'); // the start-up probe
  t.equal(audit.length, 34, 'one audit line for each of the 34 requests');
  t.ok(audit.filter((a) => a.outcome === 'shutdown').length >= 20, 'the cut ones say so');
});
