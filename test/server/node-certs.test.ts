/**
 * An rke2 node whose kubelet client certificate is about to expire, through the real HTTP
 * server: kubelet's --kubeconfig (/var/lib/rancher/rke2/agent/kubelet.kubeconfig, as k3s'
 * agent code writes it: test/fixtures/hosts/README.md) names client-kubelet.crt, and
 * /v1/node, /metrics and /v1/triage all see that certificate, never the default cert
 * dir's. The certificates are made here, at the paths the fixture's kubeconfig names.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { distroHost } from '../fixtures/hosts/index.js';
import { clientCert } from '../fixtures/kubeconfig.js';
import { testApp } from '../helpers/app.js';
import { parseProm } from '../metrics/prom-text.js';

const DAY = 86_400_000;

t.test('rke2: the client certificate kubelet uses, on /v1/node, /metrics and /v1/triage; the serving one by its flag', async (t) => {
  const now = Date.now();
  const notAfter = Math.floor((now + 2 * DAY) / 1000) * 1000;
  const c = await clientCert('vm-bthomas-rke2worker1', now - 363 * DAY, notAfter, 'rke2-client-ca@1700000000');
  const decoy = await clientCert('decoy', now - DAY, now + 300 * DAY, 'decoy-ca');
  const h = distroHost('rke2');
  t.teardown(h.cleanup);
  writeFileSync(path.join(h.root, 'var/lib/rancher/rke2/agent/client-kubelet.crt'), c.cert + c.ca);
  writeFileSync(path.join(h.root, 'var/lib/rancher/rke2/agent/client-kubelet.key'), c.key);
  const serving = await clientCert('vm-bthomas-rke2worker1', now - DAY, now + 200 * DAY, 'rke2-server-ca@1700000000');
  writeFileSync(path.join(h.root, 'var/lib/rancher/rke2/agent/serving-kubelet.crt'), serving.cert);
  mkdirSync(path.join(h.root, 'var/lib/kubelet/pki'), { recursive: true });
  writeFileSync(path.join(h.root, 'var/lib/kubelet/pki/kubelet-client-current.pem'), decoy.cert + decoy.key);
  const ta = await testApp(['--host-root', h.root, '--kmsg-path', '/dev/null', '--kubelet-healthz', 'http://127.0.0.1:9/healthz']);
  t.teardown(() => ta.close());
  const get = (url: string) => ta.app.inject({ method: 'GET', url });

  const n = await get('/v1/node');
  t.equal(n.statusCode, 200, n.body.slice(0, 300));
  const client = n.json().facts.certificates.find((x: { role: string }) => x.role === 'client');
  t.match(client, {
    path: '/var/lib/rancher/rke2/agent/client-kubelet.crt',
    present: true,
    subject: 'CN=system:node:vm-bthomas-rke2worker1, O=system:nodes',
    issuer: 'CN=rke2-client-ca@1700000000',
    notAfter: new Date(notAfter).toISOString(),
    notAfterSeconds: notAfter / 1000,
    error: null,
  });
  t.equal(client.source, 'kubelet --kubeconfig /var/lib/rancher/rke2/agent/kubelet.kubeconfig client-certificate (/proc/1240/cmdline)');
  t.notMatch(n.body, /PRIVATE KEY/);
  // rke2 names the serving certificate by flag (no config file): the flag, not the cert dir
  t.match(n.json().facts.certificates.find((x: { role: string }) => x.role === 'serving'), {
    path: '/var/lib/rancher/rke2/agent/serving-kubelet.crt',
    present: true,
    issuer: 'CN=rke2-server-ca@1700000000',
    source: 'kubelet --tls-cert-file (/proc/1240/cmdline)',
  });

  const text = await get('/v1/node?format=text');
  t.match(text.body, new RegExp(`cert client +/var/lib/rancher/rke2/agent/client-kubelet\\.crt expires ${new Date(notAfter).toISOString().replace(/\./g, '\\.')}`));

  const m = await get('/metrics');
  t.equal(m.statusCode, 200);
  const expiry = parseProm(m.body).filter((s) => s.name === 'nodetruth_kubelet_certificate_expiry_seconds' && s.labels.certificate === 'client');
  t.same(expiry.map((s) => s.value), [notAfter / 1000], 'the metric is client-kubelet.crt\'s NotAfter, not the cert dir\'s');

  const tr = await get('/v1/triage');
  t.equal(tr.statusCode, 200, tr.body.slice(0, 300));
  const expiring = tr.json().findings.filter((f: { id: string }) => f.id === 'kubelet-cert-expiring');
  t.equal(expiring.length, 1, 'the client certificate, two days from NotAfter');
  t.match(expiring[0], { severity: 'warning', title: /^kubelet's client certificate expires in (47|48) h$/, evidence: [{ source: 'file', path: '/var/lib/rancher/rke2/agent/client-kubelet.crt', excerpt: /subject CN=system:node:vm-bthomas-rke2worker1/ }] });
  t.notMatch(tr.body, /PRIVATE KEY/);
});
