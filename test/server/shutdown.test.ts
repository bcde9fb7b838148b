/**
 * Graceful shutdown of a real `nodetruth serve` process: on SIGTERM an
 * in-flight request still gets its answer, then the process exits 0 with its
 * gRPC channel closed (nothing keeps the event loop alive).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { FakeCriServer, generateFakeNode } from '../helpers/fake-cri.js';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

t.test('SIGTERM lets in-flight requests finish, then exits 0', async (t) => {
  const fake = new FakeCriServer(generateFakeNode(2, 2));
  await fake.start();
  t.teardown(() => fake.stop());
  const port = 17000 + Math.floor(Math.random() * 2000);
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', '/', '--cri-endpoint', fake.endpoint], {
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
  const inflight = fetch(`http://127.0.0.1:${port}/v1/runtime`);
  await new Promise((r) => setTimeout(r, 200));
  child.kill('SIGTERM');
  const res = await inflight;
  t.equal(res.status, 200, 'the in-flight request completes');
  t.equal(((await res.json()) as { runtimeName: string }).runtimeName, 'fake-cri');
  t.equal(await exited, 0, 'exits 0 on its own: no open handle left (the gRPC channel is closed)');
  t.match(out, /shutting down/);
  t.match(out, /"msg":"stopped"/);
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'no longer listening');
});
