/**
 * `nodetruth attach <node> --capture` against the FAKE kubectl
 * (test/helpers/fake-kubectl.ts): debug pod, port-forward, GET /v1/bundle through
 * it into a local file, delete the pod. The fake's port-forward is a tiny HTTP
 * server that echoes the path, not an agent: the file holds that echo, which
 * proves the bytes came through the forward; a real bundle over HTTP is tested in
 * failures.test.ts.
 */
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { attach, parseAttachArgs } from '../../src/launcher/attach.js';
import { FAKE_POD_SUFFIX, installFakeKubectl, type FakeKubectl } from '../helpers/fake-kubectl.js';

const POD = `node-debugger-node-1-${FAKE_POD_SUFFIX}`;
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-attach-capture-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, err: () => err.join('') };
}

async function withFake(t: Test, fn: (fake: FakeKubectl) => Promise<void>): Promise<void> {
  const fake = installFakeKubectl();
  const saved = { ...process.env };
  Object.assign(process.env, { PATH: fake.path, FAKE_KUBECTL_LOG: fake.logFile });
  t.teardown(() => {
    process.env = saved;
    fake.cleanup();
  });
  await fn(fake);
}

t.test('--capture: debug, wait, port-forward, GET /v1/bundle into the file, delete', (t) =>
  withFake(t, async (fake) => {
    const file = path.join(dir, 'node-1.tar.gz');
    const c = io();
    const code = await attach(parseAttachArgs(['node-1', '--port', '0', '--capture', '-o', file], {}), c.io, new EventEmitter());
    t.equal(code, 0, c.err());
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
    t.equal(readFileSync(file, 'utf8'), 'fake nodetruth answer for /v1/bundle\n', 'the bytes came through the port-forward');
    t.match(c.err(), `wrote ${file}; read it with: nodetruth serve --bundle ${file}`);
    t.match(c.err(), `pod "${POD}" deleted`);
  }),
);

t.test('--capture never overwrites a file, and still deletes the pod', (t) =>
  withFake(t, async (fake) => {
    const file = path.join(dir, 'exists.tar.gz');
    writeFileSync(file, 'precious');
    const c = io();
    const code = await attach(parseAttachArgs(['node-1', '--port', '0', '--capture', '--output', file], {}), c.io, new EventEmitter());
    t.equal(code, 1);
    t.match(c.err(), /EEXIST|exists/);
    t.equal(readFileSync(file, 'utf8'), 'precious');
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
  }),
);

t.test('--capture without -o names the file after the node and the time', async (t) => {
  const o = parseAttachArgs(['node-1', '--capture'], {});
  t.equal(o.capture, true);
  t.equal(o.output, null);
  t.notOk(existsSync('nodetruth-node-1.tar.gz'));
});
