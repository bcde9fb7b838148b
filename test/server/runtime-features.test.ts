/**
 * /v1/runtime's CRI features, runtime handlers, cgroup driver and CNI evidence, through
 * the real HTTP server against the FAKE CRI answering as containerd 2.1 does (its
 * StatusResponse built from its source: test/fixtures/cri/containerd-2.1-status.ts) and
 * as containerd 1.6 does (no features, no handlers). The real 1.6 is in
 * runtime-containerd.test.ts.
 */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { CONFLIST_SOURCE, containerd21Config, containerd21Info, containerd21Runtime, containerd21Status, runcOptions } from '../fixtures/cri/containerd-2.1-status.js';

const fake = new FakeCriServer({ pods: [], containers: [], images: [] });
await fake.start();
const agent = await testApp(['--cri-endpoint', fake.endpoint, '--cri-timeout', '1500ms', '--host-root', '/']);
await agent.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(agent.app.server.address() as AddressInfo).port}`;
t.teardown(async () => {
  await agent.close();
  await fake.stop();
});

async function get(path: string, accept = 'application/json') {
  const res = await fetch(base + path, { headers: { accept } });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

/** How containerd 2.1 answers with two more handlers: one introspected with nothing supported, one whose introspection failed. */
function as21(info = containerd21Info()) {
  fake.statusReply = containerd21Status(info, [{ name: 'kata', features: {} }, { name: 'crun-broken' }]);
}

t.test('containerd 2.1: features and each handler\'s features, reported / not supported / not reported kept apart', async (t) => {
  as21();
  const res = await get('/v1/runtime');
  t.equal(res.status, 200);
  const body = JSON.parse(res.body);
  t.same(body.features, { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false }, 'a set message: absent flags are false (not supported)');
  t.same(body.runtimeHandlers, [
    { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    { name: 'crun-broken', features: null },
    { name: 'kata', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
    { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
  ]);
  t.equal(body.cgroupDriver, 'systemd', "2.x config: containerd.runtimes.runc.options.SystemdCgroup (the runtime plugin's config)");
  t.same(body.warnings, []);
  t.equal(body.conditions.length, 3, 'ContainerdHasNoDeprecationWarnings too');
});

t.test('containerd 2.1 as text: one row per flag, the unreported one says so', async (t) => {
  as21();
  const res = await get('/v1/runtime?format=text');
  t.equal(res.status, 200);
  t.equal(res.type, 'text/plain; charset=utf-8');
  const lines = res.body.trimEnd().split('\n');
  t.match(lines[0], /^CONDITION\s+STATUS\s+REASON\s+MESSAGE$/);
  t.ok(lines.some((l) => /^feature supplementalGroupsPolicy\s+true$/.test(l)), 'runtime-wide flag');
  t.ok(lines.some((l) => /^feature mountOptions\s+false$/.test(l)), 'not supported: false');
  t.ok(lines.some((l) => /^handler \(default\) recursiveReadOnlyMounts\s+true$/.test(l)), 'the default handler, named');
  t.ok(lines.some((l) => /^handler kata userNamespaces\s+false$/.test(l)));
  t.ok(lines.some((l) => /^handler crun-broken\s+features not reported by the runtime$/.test(l)), 'not reported: no STATUS, a reason');
});

t.test('containerd 1.6 (nothing sent): features null, no handlers, never false', async (t) => {
  fake.statusReply = {};
  const body = JSON.parse((await get('/v1/runtime')).body);
  t.equal(body.features, null);
  t.same(body.runtimeHandlers, []);
  t.equal(body.cgroupDriver, null, 'no verbose config: unknown, not cgroupfs');
  const text = (await get('/v1/runtime', 'text/plain')).body;
  t.match(text, /\nfeatures\s+not reported by the runtime\n/);
  t.match(text, /\nhandlers\s+not reported by the runtime\n/);
  t.notMatch(text, /false/, 'nothing reads as "not supported"');
});

t.test('the CNI config keeps its own text in the evidence; only a text holding a secret is re-serialized', async (t) => {
  as21();
  const body = JSON.parse((await get('/v1/runtime')).body);
  const [lo, net] = body.info.cniconfig.Networks;
  t.equal(net.Config.Source, CONFLIST_SOURCE, 'the conflist file as written (indentation, key order, trailing newline)');
  t.equal(net.Config.Plugins[0].Source, JSON.parse(containerd21Info().cniconfig!).Networks[1].Config.Plugins[0].Source, "libcni's per-plugin text unchanged");
  t.match(lo.Config.Source, /^\{\n"cniVersion": "0.3.1",\n/);

  // a plugin carrying a credential (as some CNI plugins take an API token in their config)
  const secretList = CONFLIST_SOURCE.replace('"type": "portmap",', '"type": "portmap",\n      "apiToken": "FAKECNITOKEN",');
  const info = containerd21Info();
  const cni = JSON.parse(info.cniconfig!);
  cni.Networks[1].Config.Source = secretList;
  as21({ ...info, cniconfig: JSON.stringify(cni) });
  const red = JSON.parse((await get('/v1/runtime')).body);
  const redNet = red.info.cniconfig.Networks;
  t.notMatch(JSON.stringify(red), /FAKECNITOKEN/);
  t.equal(JSON.parse(redNet[1].Config.Source).plugins[1].apiToken, '<redacted>', 'the text with the secret is redacted as a document');
  t.equal(redNet[0].Config.Source, lo.Config.Source, 'the loopback text beside it keeps its own text');
  t.equal(redNet[1].Config.Plugins[0].Source, net.Config.Plugins[0].Source, 'and so does each plugin text without a secret');
});

t.test('cgroup driver on 2.1 shapes: default handler first, then by name, the first runc one decides', async (t) => {
  const driver = async (runtimes: Record<string, unknown>, def = 'runc') => {
    as21(containerd21Info(containerd21Config(runtimes, def)));
    return JSON.parse((await get('/v1/runtime')).body).cgroupDriver;
  };
  t.equal(await driver({ runc: containerd21Runtime(runcOptions(false)) }), 'cgroupfs', "containerd config default's SystemdCgroup = false");
  t.equal(
    await driver({ kata: containerd21Runtime({ ConfigPath: '/etc/kata.toml' }, { runtimeType: 'io.containerd.kata.v2' }), runc: containerd21Runtime(runcOptions(true)) }, 'kata'),
    'systemd',
    'a default that is not runc does not say; runc does',
  );
  t.equal(await driver({ crun: containerd21Runtime({ BinaryName: '/usr/bin/crun', SystemdCgroup: true }), runc: containerd21Runtime(null) }), 'systemd', 'runc without options says nothing; crun (runc type) does');
  t.equal(await driver({ runc: containerd21Runtime({ systemdcgroup: true }) }), 'systemd', 'go-toml matches the option name case-insensitively');
  t.equal(await driver({ runc: containerd21Runtime({ BinaryName: 'runc' }) }), 'cgroupfs', "no SystemdCgroup: runc's default");
  t.equal(await driver({ kata: containerd21Runtime({}, { runtimeType: 'io.containerd.kata.v2' }) }, 'kata'), null, 'no runc handler: the config does not say');
});

t.test('a runtime listing more handlers than a node has: the answer is cut and says so', async (t) => {
  const many = Array.from({ length: 300 }, (_, i) => ({ name: `h${String(i).padStart(3, '0')}`, features: {} }));
  fake.statusReply = { ...containerd21Status(), runtimeHandlers: many };
  const body = JSON.parse((await get('/v1/runtime')).body);
  t.equal(body.runtimeHandlers.length, 256);
  t.match(body.warnings, [/44 of 300 not shown/]);
});

t.test('OpenAPI says what null and false mean', async (t) => {
  const doc = JSON.parse((await get('/openapi.json')).body);
  t.match(doc.paths['/v1/runtime'].get.description, /null.*reported nothing/);
  t.match(doc.paths['/v1/runtime'].get.description, /false was reported as not supported/);
});
