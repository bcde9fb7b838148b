/**
 * Runtime rules against a real containerd (read-only CRI calls only): its
 * NetworkReady=false with the CNI dirs of its own config as evidence, a broken
 * network config, then frozen (not answering) and stopped (unreachable).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { containerdMissing, TestContainerd } from '../helpers/containerd.js';

const missing = containerdMissing();
if (missing) {
  t.plan(0, `skipped: real containerd unavailable: ${missing}`);
} else {
  const ctrd = new TestContainerd();
  await ctrd.start();
  const agent = await testApp(['--cri-endpoint', ctrd.endpoint, '--cri-timeout', '1s', '--host-root', '/', '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--kmsg-path', path.join(ctrd.dir, 'no-kmsg')]);
  t.teardown(async () => {
    await agent.close();
    await ctrd.destroy();
  });
  const triage = async () => {
    const res = await agent.app.inject({ method: 'GET', url: '/v1/triage?window=100ms' });
    t.equal(res.statusCode, 200);
    return res.json() as { verdict: string; findings: Array<{ id: string; severity: string; detail: string; hint: string; evidence: Array<Record<string, string>> }> };
  };
  const confDir = path.join(ctrd.dir, 'cni/net.d');
  const binDir = path.join(ctrd.dir, 'cni/bin');

  t.test('NetworkReady=false: the CNI dirs from containerd\'s own config, empty', async (t) => {
    const r = await triage();
    const f = r.findings.find((x) => x.id === 'network-not-ready')!;
    t.ok(f, 'network-not-ready found');
    t.equal(f.severity, 'critical');
    t.match(f.detail, new RegExp(`NetworkPluginNotReady: Network plugin returns error: cni plugin not initialized; no network configuration in ${confDir}`));
    t.match(f.evidence, [
      { source: 'cri', excerpt: /NetworkReady=false reason=NetworkPluginNotReady/ },
      { source: 'file', path: confDir, excerpt: /no \*\.conf/ },
      { source: 'file', path: binDir, excerpt: 'no plugin binaries' },
    ]);
    t.notOk(r.findings.some((x) => x.id.startsWith('runtime-')), 'the runtime itself is fine');
    t.equal(r.verdict, 'critical');
  });

  t.test('a broken network config is named, and still not ready', async (t) => {
    writeFileSync(path.join(confDir, '10-broken.conflist'), '{"cniVersion":"0.4.0","name":"k8s-pod-network","plugins":[{"type":"calico"');
    const r = await triage();
    const f = r.findings.find((x) => x.id === 'network-not-ready')!;
    t.match(f.detail, /no usable network configuration .*10-broken\.conflist: not JSON/);
    t.match(f.evidence[1], { source: 'file', path: path.join(confDir, '10-broken.conflist'), excerpt: /not JSON/ });
  });

  t.test('frozen containerd: runtime-not-answering at the deadline', async (t) => {
    await ctrd.freeze();
    t.teardown(() => ctrd.thaw());
    const t0 = Date.now();
    const r = await triage();
    t.match(r.findings[0], { id: 'runtime-not-answering', severity: 'critical', evidence: [{ source: 'cri', excerpt: /did not answer within 1s/ }] });
    t.comment(`answered in ${Date.now() - t0} ms`);
    t.notOk(r.findings.some((x) => x.id === 'network-not-ready'), 'no network finding without an answer');
    ctrd.thaw();
  });

  t.test('stopped containerd: runtime-unreachable', async (t) => {
    await ctrd.stop();
    const r = await triage();
    t.match(r.findings[0], { id: 'runtime-unreachable', severity: 'critical', evidence: [{ source: 'cri', excerpt: /runtime unreachable at .*containerd\.sock/ }] });
    t.equal(r.verdict, 'critical');
  });
}
