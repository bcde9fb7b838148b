/**
 * kubelet's own --log-file through the real HTTP server: rke2 runs kubelet with
 * --log-file=/var/lib/rancher/rke2/agent/logs/kubelet.log --logtostderr=false (outside
 * /var/log, and not a journal unit), so /v1/logs?query=kubelet reads that file, inside the
 * host root and inside the directory the flag names. A link out of it, or a flag with
 * `..`, is refused with its reason and nothing of the target is answered.
 */
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { distroHost } from '../fixtures/hosts/index.js';
import { testApp } from '../helpers/app.js';

const LOG = 'var/lib/rancher/rke2/agent/logs/kubelet.log';

async function logs(prepare: (root: string) => void, url = '/v1/logs?query=kubelet') {
  const h = distroHost('rke2');
  prepare(h.root);
  const ta = await testApp(['--host-root', h.root]);
  const r = await ta.app.inject({ method: 'GET', url });
  await ta.close();
  h.cleanup();
  return r;
}

/** rke2's kubelet command line with its --log-file replaced */
function withLogFile(root: string, value: string) {
  const p = path.join(root, 'proc/1240/cmdline');
  const argv = readFileSync(p, 'utf8').split('\0').filter(Boolean);
  writeFileSync(p, argv.map((a) => (a.startsWith('--log-file=') ? `--log-file=${value}` : a)).map((a) => `${a}\0`).join(''));
}

t.test('rke2: /v1/logs?query=kubelet reads the file kubelet --log-file names, not the journal', async (t) => {
  const r = await logs(() => {}, '/v1/logs?query=kubelet&tailLines=2');
  t.equal(r.statusCode, 200, r.body);
  const b = r.json();
  t.match(b, { source: 'file', file: '/var/lib/rancher/rke2/agent/logs/kubelet.log' });
  t.equal(b.lines.length, 2);
  t.match(b.lines[1], /^E1202 .*ImagePullBackOff/);
  t.match(b.warnings[0], /^kubelet logs to a file, not to the journal: answered from \/var\/lib\/rancher\/rke2\/agent\/logs\/kubelet\.log \(kubelet --log-file \(\/proc\/1240\/cmdline\)\)/);
  const p = await logs(() => {}, '/v1/logs?query=kubelet&pattern=Started');
  t.same(p.json().lines.length, 1, 'the same pattern parameter');
});

t.test('rke2: a kubelet.log that is a link out of its directory is refused, not read', async (t) => {
  for (const target of ['/etc/secret', '../../../../../../etc/secret']) {
    const r = await logs((root) => {
      writeFileSync(path.join(root, 'etc/secret'), 'SECRET LINE\n');
      rmSync(path.join(root, LOG));
      symlinkSync(target, path.join(root, LOG));
    });
    t.equal(r.statusCode, 400, `${target}: ${r.body}`);
    t.match(r.json(), { code: 'path_outside_root', detail: /kubelet\.log leads outside \/var\/lib\/rancher\/rke2\/agent\/logs/ }, target);
    t.notMatch(r.body, /SECRET/);
  }
  // a link to the agent's own filesystem outside the host root is taken inside it (securejoin): not there
  const outside = await logs((root) => {
    const abs = path.join(path.dirname(root), 'agent-secret.log');
    writeFileSync(abs, 'SECRET LINE\n');
    rmSync(path.join(root, LOG));
    symlinkSync(abs, path.join(root, LOG));
  });
  t.not(outside.statusCode, 200, outside.body);
  t.notMatch(outside.body, /SECRET/);
});

t.test("rke2: a --log-file with '..' or not absolute is refused with its reason", async (t) => {
  for (const value of ['/var/lib/rancher/rke2/agent/logs/../../../../../../etc/secret', 'logs/kubelet.log']) {
    const r = await logs((root) => {
      writeFileSync(path.join(root, 'etc/secret'), 'SECRET LINE\n');
      withLogFile(root, value);
    });
    t.equal(r.statusCode, 400, `${value}: ${r.body}`);
    t.match(r.json(), { code: 'bad_parameter', detail: /kubelet logs to a file it names, refused: --log-file .*(has a '\.\.' component|is not an absolute path)/ }, value);
    t.notMatch(r.body, /SECRET/);
  }
});

t.test('kubelet logging to stderr (no --logtostderr=false) is not read from its --log-file', async (t) => {
  const h = distroHost('rke2');
  t.teardown(h.cleanup);
  const p = path.join(h.root, 'proc/1240/cmdline');
  const fs = await import('node:fs');
  fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace('--logtostderr=false\0', ''));
  rmSync(path.join(h.root, 'var/log/journal'), { recursive: true });
  mkdirSync(path.join(h.root, 'var/log'), { recursive: true });
  const ta = await testApp(['--host-root', h.root]);
  t.teardown(() => ta.close());
  const r = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet' });
  t.equal(r.statusCode, 503, r.body);
  t.match(r.json(), { code: 'source_unavailable', detail: /no journal and no log file for kubelet/ });
});
