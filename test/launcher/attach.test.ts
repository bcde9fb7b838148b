/**
 * `nodetruth attach` against the FAKE kubectl (test/helpers/fake-kubectl.ts): the
 * sequence of kubectl calls, the curl lines, and that the debug pod is deleted on
 * every way out (success, SIGINT, a failing wait, a refused pod, a dying port-forward).
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { attach, curlLines, DEFAULT_IMAGE, DEFAULT_PROFILE, IMAGE_DIGEST, kubectlArgs, movableImage, parseAttachArgs, UsageError, type AttachOptions } from '../../src/launcher/attach.js';
import { testApp } from '../helpers/app.js';
import { FAKE_POD_SUFFIX, installFakeKubectl, type FakeKubectl } from '../helpers/fake-kubectl.js';
import { alive } from '../helpers/pids.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const POD = `node-debugger-node-1-${FAKE_POD_SUFFIX}`;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, out: () => out.join(''), err: () => err.join('') };
}

/** Run attach in-process with the fake kubectl first on PATH and `knobs` in the environment. */
async function withFake<T>(t: Test, knobs: Record<string, string>, fn: (fake: FakeKubectl) => Promise<T>): Promise<T> {
  const fake = installFakeKubectl();
  const saved = { ...process.env };
  Object.assign(process.env, { PATH: fake.path, FAKE_KUBECTL_LOG: fake.logFile, ...knobs });
  t.teardown(() => {
    process.env = saved;
    fake.cleanup();
  });
  return fn(fake);
}

const opts = (extra: string[] = []): AttachOptions => parseAttachArgs(['node-1', ...extra], {});


t.test('flags are validated before anything runs, and become --flag=value arguments', async (t) => {
  const o = parseAttachArgs(['node-1', '-n', 'nodetruth', '--port', '0', '--context', 'arn:aws:eks:eu-west-1:1:cluster/prod', '--kubeconfig', '/k/config', '--image', 'reg.example/nt:1', '--timeout', '90s'], {});
  const k = kubectlArgs(o);
  t.same(k.debug(DEFAULT_PROFILE), [
    '--kubeconfig=/k/config',
    '--context=arn:aws:eks:eu-west-1:1:cluster/prod',
    '--namespace=nodetruth',
    'debug',
    'node/node-1',
    '--image=reg.example/nt:1',
    '--profile=sysadmin',
    `--custom=${DEFAULT_PROFILE}`,
    '--',
    'nodetruth',
    'serve',
  ]);
  t.same(k.wait('p'), ['--kubeconfig=/k/config', '--context=arn:aws:eks:eu-west-1:1:cluster/prod', '--namespace=nodetruth', 'wait', '--for=condition=Ready', 'pod/p', '--timeout=90s']);
  t.same(k.portForward('p').slice(3), ['port-forward', 'pod/p', ':7070', '--address=127.0.0.1']);
  t.same(k.delete('p').slice(3), ['delete', 'pod', 'p', '--wait=false', '--ignore-not-found']);

  t.equal(parseAttachArgs(['node-1'], {}).image, DEFAULT_IMAGE);
  t.equal(parseAttachArgs(['node-1'], { NODETRUTH_IMAGE: 'mirror.local/nt:2' }).image, 'mirror.local/nt:2');
  t.equal(parseAttachArgs(['node-1'], {}).port, 7070);

  for (const bad of [
    [],
    ['a', 'b'],
    ['Node_1'],
    ['node-1;rm -rf /'],
    ['-node'],
    ['node-1', '--image', '--privileged'],
    ['node-1', '--image', 'a b'],
    ['node-1', '-n', 'Not_A_Namespace'],
    ['node-1', '--port', '70000'],
    ['node-1', '--timeout', 'forever'],
    ['node-1', '--context', '--token=x'],
    ['node-1', '--profile-path', '/nonexistent/profile.yaml'],
    ['node-1', '--get', 'v1/triage'],
    ['node-1', '--unknown'],
  ]) {
    t.throws(() => parseAttachArgs(bad, {}), UsageError, JSON.stringify(bad));
  }
});

t.test('curl lines are quoted for pasting and aim at the forwarded port', async (t) => {
  const lines = curlLines(17070);
  t.ok(lines.every((l) => /^curl -s 'http:\/\/127\.0\.0\.1:17070\/[^']*'$/.test(l)));
  t.ok(lines.some((l) => l.includes('/v1/triage')));
  t.ok(lines.some((l) => l.includes('/v1/logs?query=kubelet&tailLines=50')));
});

t.test('--get: debug, wait, port-forward, fetch, then delete; exit 0', (t) =>
  withFake(t, {}, async (fake) => {
    const c = capture();
    const code = await attach(opts(['--port', '0', '--get', '/healthz', '--get', '/v1/triage?format=text']), c.io, new EventEmitter());
    t.equal(code, 0, c.err());
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
    const calls = fake.calls().filter((x) => x.argv);
    t.match(calls[0]!.argv, ['debug', 'node/node-1', `--image=${DEFAULT_IMAGE}`, '--profile=sysadmin', /^--custom=.*\/nodetruth-attach-[^/]+\/profile\.json$/, '--', 'nodetruth', 'serve']);
    t.match(calls[1]!.argv, ['patch', `pod/${POD}`, '--type=merge', /^--patch=\{"metadata":\{"labels":\{"nodetruth.dev\/session":"[0-9a-f]{16}"\}\},"spec":\{"activeDeadlineSeconds":14400\}\}$/], 'a 4h deadline by default');
    t.same(calls[2]!.argv, ['wait', '--for=condition=Ready', `pod/${POD}`, '--timeout=2m']);
    t.same(calls[3]!.argv, ['port-forward', `pod/${POD}`, ':7070', '--address=127.0.0.1']);
    t.same(calls[4]!.argv, ['delete', 'pod', POD, '--wait=false', '--ignore-not-found']);
    t.match(c.out(), /"status":"ok"/);
    t.match(c.out(), /fake nodetruth answer for \/v1\/triage\?format=text/);
    t.match(c.err(), `pod "${POD}" deleted from default namespace`);
    // the port-forward was ended by the launcher, not left running
    const forward = calls[3]!;
    t.ok(fake.calls().some((x) => x.pid === forward.pid && x.signal === 'SIGTERM'));
    t.notOk(alive(forward.pid));
  }),
);

t.test('--get with a non-2xx answer exits 1, and still deletes the pod', (t) =>
  withFake(t, {}, async (fake) => {
    const c = capture();
    const code = await attach(opts(['--port', '0', '-n', 'ops', '--get', '/missing']), c.io, new EventEmitter());
    t.equal(code, 1);
    t.match(c.err(), 'GET /missing: 404');
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
    t.match(c.err(), `pod "${POD}" deleted from ops namespace`);
  }),
);

t.test('a failing wait shows the pod log, deletes the pod and exits 1; no port-forward', (t) =>
  withFake(t, { FAKE_KUBECTL_WAIT: 'timeout' }, async (fake) => {
    const c = capture();
    const code = await attach(opts(), c.io, new EventEmitter());
    t.equal(code, 1);
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'logs', 'delete']);
    t.match(c.err(), `error: timed out waiting for the condition on pods/${POD}`);
    t.match(c.err(), '  | nodetruth: listen EADDRINUSE');
    t.match(c.err(), `pod "${POD}" deleted`);
  }),
);

t.test('--max-duration becomes the pod\'s activeDeadlineSeconds, set before the pod is waited for', (t) =>
  withFake(t, {}, async (fake) => {
    const c = capture();
    const code = await attach(opts(['--port', '0', '--max-duration', '90m', '-n', 'nodetruth', '--get', '/healthz']), c.io, new EventEmitter());
    t.equal(code, 0, c.err());
    const patch = fake.calls().find((x) => x.argv?.includes('patch'))!;
    t.same(patch.argv!.slice(0, 4), ['--namespace=nodetruth', 'patch', `pod/${POD}`, '--type=merge']);
    // what the API server would receive: a merge patch that only adds the pod-level field and the session's label
    t.match(JSON.parse(patch.argv!.at(-1)!.slice('--patch='.length)), { metadata: { labels: { 'nodetruth.dev/session': /^[0-9a-f]{16}$/ } }, spec: { activeDeadlineSeconds: 5400 } });
    t.same(fake.pods()[0]?.activeDeadlineSeconds ?? 5400, 5400);
  }),
);

t.test('a refused deadline patch ends the session: the pod is deleted, not left without a deadline', (t) =>
  withFake(t, { FAKE_KUBECTL_PATCH: 'forbidden' }, async (fake) => {
    const c = capture();
    const code = await attach(opts(), c.io, new EventEmitter());
    t.equal(code, 1);
    t.same(fake.verbs(), ['debug', 'patch', 'delete']);
    t.match(c.err(), 'cannot patch resource "pods"');
    t.match(c.err(), 'it needs `patch` on pods (deploy/attach-rbac.yaml)');
  }),
);

t.test('--timeout reaches kubectl wait in a form it reads', async (t) => {
  t.equal(opts(['--timeout', '1d']).timeout, '24h');
  t.equal(opts(['--timeout', '1m30s']).timeout, '90s');
  for (const bad of ['0s', '25h', '1.5s', 'forever']) t.throws(() => opts(['--timeout', bad]), { name: 'UsageError', message: /--timeout/ }, bad);
});

t.test('--max-duration is bounded and validated', async (t) => {
  t.equal(opts().maxDurationSeconds, 4 * 3600, 'default 4h');
  t.equal(opts(['--max-duration', '1m']).maxDurationSeconds, 60);
  t.equal(opts(['--max-duration', '168h']).maxDurationSeconds, 7 * 24 * 3600);
  t.equal(opts(['--max-duration', '1.5h']).maxDurationSeconds, 5400, 'the one duration grammar: fractions');
  t.equal(opts(['--max-duration', '4d']).maxDurationSeconds, 4 * 24 * 3600, 'and days');
  t.equal(opts(['--max-duration', '1h30m']).maxDurationSeconds, 5400);
  for (const bad of ['0s', '59s', '169h', '8d', '-1h', '90.5s', '', 'forever']) {
    t.throws(() => opts(['--max-duration', bad]), { name: 'UsageError', message: /--max-duration/ }, JSON.stringify(bad));
  }
});

t.test('a pod refused by Pod Security: a hint, and delete --ignore-not-found all the same', (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'psa' }, async (fake) => {
    const c = capture();
    const code = await attach(opts(), c.io, new EventEmitter());
    t.equal(code, 1);
    t.same(fake.verbs(), ['debug', 'delete']);
    t.match(c.err(), 'violates PodSecurity');
    t.match(c.err(), 'pass --namespace with one that does');
  }),
);

t.test('kubectl too old for --custom: a hint, and nothing to delete', (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'old' }, async (fake) => {
    const c = capture();
    t.equal(await attach(opts(), c.io, new EventEmitter()), 1);
    t.same(fake.verbs(), ['debug'], 'no pod name was printed, so no delete');
    t.match(c.err(), 'unknown flag: --custom');
    t.match(c.err(), 'kubectl 1.30 or newer');
  }),
);

t.test('kubectl 1.30 gets its custom-profile gate turned on, unless the user set it', (t) =>
  withFake(t, { FAKE_KUBECTL_WAIT: 'timeout' }, async (fake) => {
    delete process.env.KUBECTL_DEBUG_CUSTOM_PROFILE;
    await attach(opts(), capture().io, new EventEmitter());
    t.ok(fake.calls().filter((x) => x.argv).every((x) => x.customProfileGate === 'true'));
  }),
);

t.test('a port-forward that dies ends the session with 1, and the pod is deleted', (t) =>
  withFake(t, { FAKE_KUBECTL_FORWARD: 'die' }, async (fake) => {
    const c = capture();
    const code = await attach(opts(['--port', '0']), c.io, new EventEmitter());
    t.equal(code, 1);
    t.match(c.err(), 'lost connection to pod');
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
  }),
);

t.test('SIGINT while waiting for readiness: wait is ended, pod deleted, exit 130', (t) =>
  withFake(t, { FAKE_KUBECTL_WAIT: 'hang' }, async (fake) => {
    const c = capture();
    const signals = new EventEmitter();
    const running = attach(opts(), c.io, signals);
    // send the signal once the wait is running
    for (let i = 0; i < 100 && !fake.verbs().includes('wait'); i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
    signals.emit('SIGINT', 'SIGINT');
    t.equal(await running, 130);
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'delete']);
    const wait = fake.calls().find((x) => x.argv?.includes('wait'))!;
    t.notOk(alive(wait.pid), 'kubectl wait is not left running');
  }),
);

t.test('kubectl missing from PATH: a clear message and exit 1', async (t) => {
  const saved = process.env.PATH;
  process.env.PATH = '/nonexistent';
  t.teardown(() => void (process.env.PATH = saved));
  const c = capture();
  t.equal(await attach(opts(), c.io, new EventEmitter()), 1);
  t.match(c.err(), 'kubectl not found on PATH');
  t.notMatch(c.err(), 'look for', 'nothing was created, so nothing is looked for');
});

t.test('the real command: curl lines, a working forward, then Ctrl-C (SIGINT) deletes the pod', (t) =>
  withFake(t, {}, async (fake) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'attach', 'node-1', '--port', '0'], {
      cwd: ROOT,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
    for (let i = 0; i < 1200 && !out.includes('/metrics'); i++) await new Promise((r) => setTimeout(r, 50));
    const lines = out.split('\n').filter((l) => l.startsWith('curl '));
    t.ok(lines.length >= 8, 'curl lines printed');
    if (lines.length < 8) t.comment(out, err);
    // the printed command works as printed (through the fake's forward)
    const url = /'(http:[^']+)'/.exec(lines.find((l) => l.includes('/v1/triage'))!)![1]!;
    t.match(await (await fetch(url)).text(), 'fake nodetruth answer for /v1/triage?format=text');
    t.match(err, `answering for node node-1 on http://127.0.0.1:`);

    child.kill('SIGINT');
    t.equal(await exited, 0, 'exit 0 after Ctrl-C ends a session');
    t.same(fake.verbs(), ['debug', 'patch', 'wait', 'port-forward', 'delete']);
    t.match(err, `pod "${POD}" deleted from default namespace`);
    const forward = fake.calls().find((x) => x.argv?.includes('port-forward'))!;
    t.notOk(alive(forward.pid), 'kubectl port-forward is not left running');
  }),
);

/** The env values of the debug pod as the fake API server holds it (created from the --custom profile kubectl read). */
const podEnv = (fake: FakeKubectl, name = POD) => new Map((fake.pods().find((p) => p.name === name)?.env ?? []).map((e) => [e.name, e.value]));
/** The pods' env as kubectl debug read it from --custom, one map per debug call. */
const customEnvs = (fake: FakeKubectl) =>
  fake
    .calls()
    .filter((x) => x.custom !== undefined)
    .map((x) => new Map(((x.custom?.env ?? []) as { name: string; value?: string }[]).map((e) => [e.name, e.value])));

t.test('the debug pod carries a fresh per-session token and id in its env, and the patch labels it; the token is shown nowhere', (t) =>
  withFake(t, { FAKE_KUBECTL_WAIT: 'hang' }, async (fake) => {
    const c = capture();
    const signals = new EventEmitter();
    const running = attach(opts(['--port', '0']), c.io, signals);
    for (let i = 0; i < 200 && !fake.verbs().includes('wait'); i++) await new Promise((r) => setTimeout(r, 25));
    const env = podEnv(fake);
    const token = env.get('NODETRUTH_SESSION_TOKEN');
    const id = env.get('NODETRUTH_SESSION_ID');
    t.match(token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    t.match(id, /^[0-9a-f]{16}$/);
    const custom = fake.calls().find((x) => x.custom !== undefined)!.custom!;
    // the user's profile is kept, with the session's values added
    t.match(custom, { readinessProbe: { httpGet: { path: '/healthz', port: 7070 } }, volumeMounts: [{ name: 'host-root', readOnly: true }] });
    t.ok(env.has('NODETRUTH_HOST_ROOT') && env.has('NODE_OPTIONS'), "the profile's own env stays");
    // the agent accepts what the pod gets: the config it would load from that env
    t.equal(loadConfig([], { NODETRUTH_SESSION_TOKEN: token, NODETRUTH_HOST_ROOT: '/', NODE_NAME: 'node-1' }).config.sessionToken, token);
    t.same(fake.pods()[0]!.labels, { 'app.kubernetes.io/managed-by': 'kubectl-debug', 'nodetruth.dev/session': id }, 'labelled by the deadline patch');
    t.equal(fake.pods()[0]!.activeDeadlineSeconds, 14400);
    // the session's copy of the profile is gone once kubectl debug has read it
    const custom0 = fake.calls().find((x) => x.argv?.includes('debug'))!.argv!.find((a) => a.startsWith('--custom='))!.slice('--custom='.length);
    t.notOk(existsSync(custom0), 'the profile copy holding the token is removed');
    t.equal(statSync(path.dirname(path.dirname(custom0))).isDirectory(), true);
    signals.emit('SIGINT', 'SIGINT');
    t.equal(await running, 130);
    // nowhere on a command line, nor in anything printed
    t.notOk(fake.calls().some((x) => x.argv?.some((a) => a.includes(token!))), 'not on any kubectl command line');
    t.notOk(c.out().includes(token!) || c.err().includes(token!), 'not printed');
    t.same(fake.pods(), [], 'deleted');
  }),
);

t.test('every session has its own token and id', (t) =>
  withFake(t, { FAKE_KUBECTL_PATCH: 'forbidden' }, async (fake) => {
    await attach(opts(), capture().io, new EventEmitter());
    await attach(opts(), capture().io, new EventEmitter());
    const [a, b] = customEnvs(fake);
    t.ok(a && b);
    t.not(a!.get('NODETRUTH_SESSION_TOKEN'), b!.get('NODETRUTH_SESSION_TOKEN'));
    t.not(a!.get('NODETRUTH_SESSION_ID'), b!.get('NODETRUTH_SESSION_ID'));
  }),
);

t.test('the launcher\'s port adds the token and replaces one the client sent; kubectl\'s own forward answers 401 without it', (t) =>
  withFake(t, {}, async (fake) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'attach', 'node-1', '--port', '0'], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
    for (let i = 0; i < 1200 && !out.includes('/metrics'); i++) await new Promise((r) => setTimeout(r, 50));
    const url = /'(http:[^']+)'/.exec(out.split('\n').find((l) => l.includes('/v1/triage'))!)![1]!;
    t.equal((await fetch(url)).status, 200, 'through the launcher');
    t.equal((await fetch(url, { headers: { 'x-nodetruth-session': 'guessed-by-a-neighbour' } })).status, 200, "a client's own header is replaced, not passed on");
    // kubectl's forward (a random port) is what another host-network pod reaches on the node: no token, no answer
    const fwdPort = fake.calls().find((x) => x.forwarding)?.forwarding;
    t.ok(fwdPort, "kubectl's forward listens");
    const direct = await fetch(`http://127.0.0.1:${fwdPort}/v1/triage?format=text`);
    t.equal(direct.status, 401, 'the agent side refuses a request without the token');
    t.equal((await fetch(`http://127.0.0.1:${fwdPort}/healthz`)).status, 200, '/healthz stays open');
    t.match(err, 'answering for node node-1');
    child.kill('SIGINT');
    t.equal(await exited, 0);
    t.same(fake.pods(), []);
  }),
);

t.test('kubectl\'s output does not name the pod: it is found by the session id, given its deadline and label, and deleted', (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'unparsable' }, async (fake) => {
    const c = capture();
    const code = await attach(opts(['--port', '0', '--get', '/healthz']), c.io, new EventEmitter());
    t.equal(code, 0, c.err());
    t.same(fake.verbs(), ['debug', 'get', 'patch', 'wait', 'port-forward', 'delete']);
    const calls = fake.calls().filter((x) => x.argv);
    t.match(calls[1]!.argv, ['get', 'pods', '--selector=app.kubernetes.io/managed-by=kubectl-debug', '--field-selector=spec.nodeName=node-1', /^--output=jsonpath=/, '--request-timeout=20s']);
    t.match(calls[2]!.argv, ['patch', `pod/${POD}`, '--type=merge', /activeDeadlineSeconds":14400/]);
    t.same(calls[5]!.argv, ['delete', 'pod', POD, '--wait=false', '--ignore-not-found']);
    t.match(c.err(), `found this session's debug pod ${POD}`);
    t.same(fake.pods(), [], 'no pod left behind');
  }),
);

t.test('kubectl debug fails after the API server created the pod, without naming it: the pod is still found and deleted', (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'unparsable-fail' }, async (fake) => {
    const c = capture();
    t.equal(await attach(opts(), c.io, new EventEmitter()), 1);
    t.same(fake.verbs(), ['debug', 'get', 'delete']);
    t.match(c.err(), 'context deadline exceeded');
    t.same(fake.pods(), [], 'no privileged pod left without a deadline');
  }),
);

t.test("another session's debug pod on the same node is never taken for this one", (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'unparsable-fail' }, async (fake) => {
    // a colleague's session: created, named, still running
    process.env.FAKE_KUBECTL_DEBUG = 'ok';
    process.env.FAKE_KUBECTL_WAIT = 'hang';
    const theirs = new EventEmitter();
    const other = attach(opts(), capture().io, theirs);
    for (let i = 0; i < 200 && !fake.verbs().includes('wait'); i++) await new Promise((r) => setTimeout(r, 25));
    process.env.FAKE_KUBECTL_DEBUG = 'unparsable-fail';
    process.env.FAKE_KUBECTL_SUFFIX = 'b4c6d';
    const c = capture();
    t.equal(await attach(opts(), c.io, new EventEmitter()), 1);
    t.same(
      fake.pods().map((p) => p.name),
      [POD],
      "ours (node-debugger-node-1-b4c6d, found by its own id) is deleted; theirs is not touched",
    );
    t.same(fake.calls().filter((x) => x.argv?.includes('delete')).map((x) => x.argv!.at(2)), ['node-debugger-node-1-b4c6d']);
    theirs.emit('SIGINT', 'SIGINT');
    await other;
  }),
);

t.test('the pod cannot be looked up (no list right): how to find it is said', (t) =>
  withFake(t, { FAKE_KUBECTL_DEBUG: 'unparsable-fail', FAKE_KUBECTL_GET: 'forbidden' }, async (fake) => {
    const c = capture();
    t.equal(await attach(opts(['-n', 'nodetruth-attach']), c.io, new EventEmitter()), 1);
    t.same(fake.verbs(), ['debug', 'get']);
    t.match(c.err(), /look yourself: kubectl get pods --namespace=nodetruth-attach --selector=app.kubernetes.io\/managed-by=kubectl-debug --field-selector=spec.nodeName=node-1, and delete the one whose env NODETRUTH_SESSION_ID is [0-9a-f]{16}/);
  }),
);

t.test('the image: the default names the version, never a moving tag; a digest is kept; a movable one is warned about', async (t) => {
  t.match(DEFAULT_IMAGE, /^ghcr\.io\/nodetruth\/nodetruth:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?$/);
  t.equal(IMAGE_DIGEST === null ? DEFAULT_IMAGE.includes('@') : DEFAULT_IMAGE.endsWith(`@${IMAGE_DIGEST}`), IMAGE_DIGEST !== null);
  t.notOk(movableImage(DEFAULT_IMAGE));
  const pinned = `reg.example:5000/nt:1.2.3@sha256:${'ab'.repeat(32)}`;
  t.equal(opts(['--image', pinned]).image, pinned);
  t.equal(kubectlArgs(opts(['--image', pinned])).debug('p')[2], `--image=${pinned}`, 'given to kubectl as given');
  t.notOk(movableImage(pinned));
  t.notOk(movableImage(`nt@sha256:${'0'.repeat(64)}`));
  for (const m of ['nt', 'nt:latest', 'reg.example:5000/nt', 'reg.example:5000/nt:latest']) t.ok(movableImage(m), m);
  for (const bad of ['nt@sha256:abc', `nt@sha512:${'a'.repeat(128)}`, `nt@SHA256:${'A'.repeat(64)}`]) t.throws(() => opts(['--image', bad]), UsageError, bad);
});

t.test('a movable --image is said before the pod is made', (t) =>
  withFake(t, { FAKE_KUBECTL_PATCH: 'forbidden' }, async () => {
    const c = capture();
    await attach(opts(['--image', 'mirror.local/nodetruth:latest']), c.io, new EventEmitter());
    t.match(c.err(), 'image mirror.local/nodetruth:latest is a movable tag');
  }),
);

t.test('end to end with a real agent: the launcher, the fake kubectl, and nodetruth serve with the pod\'s session token', (t) =>
  withFake(t, { FAKE_KUBECTL_WAIT: 'file' }, async (fake) => {
    const hostRoot = mkdtempSync(path.join(tmpdir(), 'nodetruth-attach-host-'));
    t.teardown(() => rmSync(hostRoot, { recursive: true, force: true }));
    const c = capture();
    const session = attach(opts(['--port', '0', '--get', '/openapi.json']), c.io, new EventEmitter());
    // the "kubelet": once the pod exists, run the agent with the env its spec gives it
    for (let i = 0; i < 400 && !podEnv(fake).has('NODETRUTH_SESSION_TOKEN'); i++) await new Promise((r) => setTimeout(r, 25));
    const token = podEnv(fake).get('NODETRUTH_SESSION_TOKEN')!;
    const agent = await testApp(['--host-root', hostRoot, '--node-name', 'node-1'], { NODETRUTH_SESSION_TOKEN: token });
    t.teardown(() => agent.close());
    await agent.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (agent.app.server.address() as AddressInfo).port;
    writeFileSync(path.join(fake.dir, 'forward-to'), String(port));
    writeFileSync(path.join(fake.dir, 'ready'), '');
    t.equal(await session, 0, c.err());
    t.ok(JSON.parse(c.out()).paths, "the agent's answer, through the launcher's port and the forward");
    // a neighbour on the node's loopback, without the token
    t.equal((await fetch(`http://127.0.0.1:${port}/openapi.json`)).status, 401);
    await new Promise((r) => setTimeout(r, 50));
    const audits = agent.logs.filter((l) => l.audit).map((l) => l.audit as { route: string | null; status: number });
    t.ok(audits.some((a) => a.route === '/openapi.json' && a.status === 200), 'the session was answered');
    t.ok(audits.some((a) => a.route === '/openapi.json' && a.status === 401), 'the neighbour was refused');
    t.notOk(agent.logs.some((l) => JSON.stringify(l).includes(token)), 'the token is in no log line');
    t.same(fake.pods(), []);
  }),
);
