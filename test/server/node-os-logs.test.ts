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
import { BOOTS, BOOT_WALL_US, MACHINE_ID, exportEntry, writeJournal } from '../fixtures/journal/gen.js';
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

t.test('k3s: kubelet has no unit of its own: query=kubelet answers from the k3s unit, saying so', async (t) => {
  const h = distroHost('k3s');
  t.teardown(h.cleanup);
  const entry = (unit: string, pid: number, message: string, monoUs: number) =>
    exportEntry([
      ['__REALTIME_TIMESTAMP', String(BOOT_WALL_US[2] + monoUs)],
      ['__MONOTONIC_TIMESTAMP', String(monoUs)],
      ['_BOOT_ID', BOOTS[2]],
      ['_MACHINE_ID', MACHINE_ID],
      ['_HOSTNAME', 'k3s-node'],
      ['_TRANSPORT', 'stdout'],
      ['_SYSTEMD_UNIT', unit],
      ['SYSLOG_IDENTIFIER', unit.replace(/\.service$/, '')],
      ['_PID', String(pid)],
      ['PRIORITY', '6'],
      ['MESSAGE', message],
    ]);
  await writeJournal(path.join(h.root, 'var/log/journal'), 'system', [
    entry('k3s.service', 901, 'time="2026-12-02T10:00:00Z" level=info msg="Starting k3s v1.31.4+k3s1"', 1_000_000),
    entry('k3s.service', 901, 'E1202 10:00:05.000001     901 pod_workers.go:1301] "Error syncing pod, skipping" err="CrashLoopBackOff"', 2_000_000),
    entry('containerd.service', 955, 'unrelated', 3_000_000),
  ]);
  const ta = await testApp(['--host-root', h.root]);
  t.teardown(() => ta.close());
  const r = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet' });
  t.equal(r.statusCode, 200, r.body);
  const b = r.json();
  t.equal(b.source, 'journal');
  t.same(b.records.map((x: any) => x.message.slice(0, 20)), ['time="2026-12-02T10:', 'E1202 10:00:05.00000']);
  t.match(b.warnings[0], /^kubelet has no unit of its own: answered from k3s\.service \(k3s-server \(pid 901\) runs kubelet; its unit from \/proc\/901\/cgroup\)/);
});
