/**
 * scripts/bundle.mjs: the esbuild bundle is what the package's bin and the image run, so it
 * must serve as dist/cli.js does, including what src/ loads on first use from CommonJS
 * packages (the self-signed certificate of `--tls on`: the DaemonSet's start).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import path from 'node:path';
import t from 'tap';
import { freePort, REPO } from '../helpers/agent-process.js';

// @ts-expect-error: a plain .mjs script, no declarations
const { bundle } = (await import('../../scripts/bundle.mjs')) as { bundle: (o: { outdir: string }) => Promise<unknown> };

// inside the repository, so that what stays external resolves from its node_modules
const outdir = mkdtempSync(path.join(REPO, '.bundle-test-'));
t.teardown(() => rmSync(outdir, { recursive: true, force: true }));

function getHealthz(port: number): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', rejectUnauthorized: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

t.test('the bundle serves over TLS with its self-signed certificate', async (t) => {
  await bundle({ outdir });
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(outdir, 'nodetruth.mjs'), 'serve', '--listen', `127.0.0.1:${port}`, '--tls', 'on', '--cri-endpoint', 'unix:///nonexistent/cri.sock'], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = once(child, 'exit');
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let answer: { status: number; body: string } | null = null;
  for (let i = 0; i < 300 && child.exitCode === null && !answer; i++) {
    answer = await getHealthz(port);
    if (!answer) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(answer, `the bundled agent answered over TLS (its output: ${output.slice(-600)})`);
  t.equal(answer?.status, 200);
  t.match(answer?.body ?? '', /"status":"ok"/);
  child.kill('SIGTERM');
  const [code] = await exited;
  t.equal(code, 0, 'stops cleanly on SIGTERM');
});
