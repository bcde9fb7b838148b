/**
 * `nodetruth attach` against the FAKE kubectl (test/helpers/fake-kubectl.ts): the
 * sequence of kubectl calls, the curl lines, and that the debug pod is deleted on
 * every way out (success, SIGINT, a failing wait, a refused pod, a dying port-forward).
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { attach, curlLines, DEFAULT_IMAGE, DEFAULT_PROFILE, kubectlArgs, parseAttachArgs, UsageError, type AttachOptions } from '../../src/launcher/attach.js';
import { FAKE_POD_SUFFIX, installFakeKubectl, type FakeKubectl } from '../helpers/fake-kubectl.js';

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

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('flags are validated before anything runs, and become --flag=value arguments', async (t) => {
  const o = parseAttachArgs(['node-1', '-n', 'nodetruth', '--port', '0', '--context', 'arn:aws:eks:eu-west-1:1:cluster/prod', '--kubeconfig', '/k/config', '--image', 'reg.example/nt:1', '--timeout', '90s'], {});
  const k = kubectlArgs(o);
  t.same(k.debug, [
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
    t.same(calls[0]!.argv, ['debug', 'node/node-1', `--image=${DEFAULT_IMAGE}`, '--profile=sysadmin', `--custom=${DEFAULT_PROFILE}`, '--', 'nodetruth', 'serve']);
    t.same(calls[1]!.argv, ['patch', `pod/${POD}`, '--type=merge', '--patch={"spec":{"activeDeadlineSeconds":14400}}'], 'a 4h deadline by default');
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
    t.same(patch.argv, ['--namespace=nodetruth', 'patch', `pod/${POD}`, '--type=merge', '--patch={"spec":{"activeDeadlineSeconds":5400}}']);
    // what the API server would receive: a merge patch that only adds the pod-level field
    t.same(JSON.parse(patch.argv!.at(-1)!.slice('--patch='.length)), { spec: { activeDeadlineSeconds: 5400 } });
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

t.test('--max-duration is bounded and validated', async (t) => {
  t.equal(opts().maxDurationSeconds, 4 * 3600, 'default 4h');
  t.equal(opts(['--max-duration', '1m']).maxDurationSeconds, 60);
  t.equal(opts(['--max-duration', '168h']).maxDurationSeconds, 7 * 24 * 3600);
  for (const bad of ['0s', '59s', '169h', '4d', '-1h', '1.5h', '', 'forever']) {
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
