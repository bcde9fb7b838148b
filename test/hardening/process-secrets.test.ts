/**
 * A process's credentials leave the agent redacted at every exit. The proc reader
 * returns a command line as the process set it; redaction happens where it leaves:
 * the route answer (JSON and text), the capture's stored answer (and every other
 * entry of the bundle), and the agent's own log lines.
 *
 * The FAKE node's running container gets a main process whose /proc/<pid>/cmdline
 * holds secrets in the shapes a command line carries them (`--db-password=x`,
 * `--token x`, and a `sh -c` script with mysql's `-pSECRET`, curl's
 * `-H 'Authorization: Bearer …'` and URL userinfo), and whose environ holds one (the
 * agent never reads environ: it must appear nowhere).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { captureBundle } from '../../src/bundle/capture.js';
import { countRedacted } from '../../src/bundle/format.js';
import { readBundle } from '../../src/bundle/read.js';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const host = await makeFakeScaleHost({ pods: 2, perPod: 1, logLines: 2 });
const n = randomBytes(6).toString('hex');
const S = {
  flag: `FAKEPROCFLAG${n}`,
  next: `FAKEPROCNEXT${n}`,
  mysql: `FAKEPROCMYSQL${n}`,
  bearer: `FAKEPROCBEARER${n}`,
  url: `FAKEPROCURL${n}`,
  environ: `FAKEPROCENVIRON${n}`,
};
const secrets = Object.values(S);
const c = host.node.containers.find((x) => x.state === 'CONTAINER_RUNNING' && x.pid)!;
const procDir = path.join(host.root, 'proc', String(c.pid));
const script = `mysql -uroot -p${S.mysql} shop && curl -H 'Authorization: Bearer ${S.bearer}' https://admin:${S.url}@10.0.0.7/backup`;
writeFileSync(path.join(procDir, 'cmdline'), ['/app/server', `--db-password=${S.flag}`, '--token', S.next, 'sh', '-c', script, ''].join('\0'));
writeFileSync(path.join(procDir, 'environ'), `DB_PASSWORD=${S.environ}\0PATH=/bin\0`);

const cri = new FakeCriServer(host.node);
await cri.start();
const agent = await testApp(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'node-a']);
t.teardown(async () => {
  await agent.close();
  await cri.stop();
  host.cleanup();
});
const get = (url: string) => agent.app.inject({ method: 'GET', url, headers: { host: '127.0.0.1' } });
const leaks = (body: string) => secrets.filter((s) => body.includes(s));

t.test('/v1/containers/{id}/processes: the command line leaves without its credentials', async (t) => {
  const r = await get(`/v1/containers/${c.id}/processes`);
  t.equal(r.statusCode, 200, r.body.slice(0, 300));
  t.same(leaks(r.body), [], 'JSON: no secret');
  const main = (r.json().items as { pid: number; cmdline: string[] }[]).find((p) => p.pid === c.pid);
  t.ok(main, 'the main process is listed');
  t.same(main!.cmdline.slice(0, 5), ['/app/server', '--db-password=<redacted>', '--token', '<redacted>', 'sh'], 'flags keep their names, lose their values');
  t.match(main!.cmdline[6], /-p<redacted> shop .*Authorization: Bearer <redacted>.*admin:<redacted>@10\.0\.0\.7/, 'the script keeps its words, not its secrets');
  for (const url of [`/v1/containers/${c.id}/processes?format=text`, `/v1/containers/${c.id.slice(0, 12)}/processes`]) {
    const x = await get(url);
    t.equal(x.statusCode, 200, url);
    t.same(leaks(x.body), [], `${url}: no secret`);
    t.match(x.body, /--db-password=<redacted>/, `${url}: the marker is there`);
  }
});

t.test('a capture stores the processes answer redacted, and no entry holds a secret', async (t) => {
  const file = path.join(host.base, 'capture.tar.gz');
  await captureBundle({ app: agent.app, deps: agent.deps, argv: ['nodetruth', 'capture'] }, createWriteStream(file));
  const b = await readBundle(file);
  const stored = [...b.entries.keys()].filter((name) => name.startsWith(`api/v1/containers/${c.id}/processes`));
  t.ok(stored.length > 0, `the processes answer is stored (${stored.join(', ')})`);
  for (const name of stored) {
    const body = b.entries.get(name)!.toString('utf8');
    t.match(body, /--db-password=<redacted>/, `${name}: redacted`);
    t.ok(countRedacted(body) >= 5, `${name}: its markers are counted`);
  }
  for (const [name, body] of b.entries) t.same(leaks(body.toString('latin1')), [], `${name}: no secret`);
});

t.test("the agent's own log lines hold no secret", async (t) => {
  t.ok(agent.logs.length > 0, 'the agent logged (audit lines among them)');
  t.same(leaks(JSON.stringify(agent.logs)), []);
});
