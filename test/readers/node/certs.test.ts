/**
 * kubelet's client certificate read from where kubelet takes it: its --kubeconfig's user.
 * Host roots laid out as the distributions define them (test/fixtures/hosts: rke2's and
 * k3s' kubelet.kubeconfig; kubeadm's kubelet.conf beside the rotated link), with real
 * certificates made here at the paths those files name; embedded client-certificate-data;
 * an EKS-style exec user falling back to the cert dir; hostile kubeconfigs. The private
 * key never leaves, nothing outside the host root is read, nothing throws.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { KubeletCertificate, Sourced } from '../../../src/model/node.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { certificateIn, kubeletCertificates, noCertificate, readCertificate } from '../../../src/readers/node/certs.js';
import { nodeFacts } from '../../../src/readers/node/facts.js';
import { distroHost } from '../../fixtures/hosts/index.js';
import { clientCert, KUBELET_CONF } from '../../fixtures/kubeconfig.js';
import { DAY, factsHost, NOW } from '../../fixtures/node-facts.js';

const secs = (ms: number) => Math.floor(ms / 1000);
const KC_FLAG = (value: string, pid = 702): Sourced => ({ value, source: `kubelet --kubeconfig (/proc/${pid}/cmdline)` });
const CERT_DIR: Sourced = { value: '/var/lib/kubelet/pki', source: "kubelet's default" };

// made once: EC keys, a CA and a leaf each
const rke2 = await clientCert('vm-bthomas-rke2worker1', NOW - 300 * DAY, NOW + 2 * DAY, 'rke2-client-ca@1700000000'); // two days left
const k3s = await clientCert('k3s-server-1', NOW - 100 * DAY, NOW + 265 * DAY, 'k3s-client-ca@1700000000');
const decoy = await clientCert('decoy', NOW - 10 * DAY, NOW + 20 * DAY, 'decoy-ca');

function host(t: Test): { root: string; base: string; write: (p: string, text: string) => void } {
  const base = mkdtempSync(path.join(tmpdir(), 'nodetruth-certs-'));
  const root = path.join(base, 'root');
  mkdirSync(root);
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const write = (p: string, text: string) => {
    mkdirSync(path.join(root, path.dirname(p)), { recursive: true });
    writeFileSync(path.join(root, p), text);
  };
  return { root, base, write };
}

const client = async (root: string, kubeconfig: Sourced | null) => (await kubeletCertificates(new HostFs(root), null, NOW, CERT_DIR, kubeconfig))[0]!;
const noKey = (t: Test, c: unknown, key: string) => {
  const json = JSON.stringify(c);
  t.notMatch(json, /PRIVATE KEY/, 'no key block');
  t.notOk(json.includes(key.split('\n')[1]!), "not a line of the key's base64");
};

t.test('rke2: --kubeconfig names /var/lib/rancher/rke2/agent/client-kubelet.crt, read over the cert dir', async (t) => {
  const h = distroHost('rke2');
  t.teardown(h.cleanup);
  const agent = path.join(h.root, 'var/lib/rancher/rke2/agent');
  writeFileSync(path.join(agent, 'client-kubelet.crt'), rke2.cert + rke2.ca); // k3s' agent writes the leaf, then its CA
  writeFileSync(path.join(agent, 'client-kubelet.key'), rke2.key);
  // a stale file in the default cert dir kubelet does not use here
  mkdirSync(path.join(h.root, 'var/lib/kubelet/pki'), { recursive: true });
  writeFileSync(path.join(h.root, 'var/lib/kubelet/pki/kubelet-client-current.pem'), decoy.cert + decoy.key);
  const f = await nodeFacts(new HostFs(h.root), { nowMs: NOW });
  const c = f.certificates.find((x) => x.role === 'client')!;
  t.same(c, {
    role: 'client',
    path: '/var/lib/rancher/rke2/agent/client-kubelet.crt',
    target: null,
    present: true,
    subject: 'CN=system:node:vm-bthomas-rke2worker1, O=system:nodes',
    issuer: 'CN=rke2-client-ca@1700000000',
    notBefore: new Date(secs(NOW - 300 * DAY) * 1000).toISOString(),
    notAfter: new Date(secs(NOW + 2 * DAY) * 1000).toISOString(),
    notAfterSeconds: secs(NOW + 2 * DAY),
    secondsLeft: 2 * 86400,
    error: null,
    source: 'kubelet --kubeconfig /var/lib/rancher/rke2/agent/kubelet.kubeconfig client-certificate (/proc/1240/cmdline)',
  });
  noKey(t, f.certificates, rke2.key);
});

t.test('rke2: client-kubelet.crt missing is said so, not replaced by the cert dir\'s file', async (t) => {
  const h = distroHost('rke2');
  t.teardown(h.cleanup);
  mkdirSync(path.join(h.root, 'var/lib/kubelet/pki'), { recursive: true });
  writeFileSync(path.join(h.root, 'var/lib/kubelet/pki/kubelet-client-current.pem'), decoy.cert);
  const f = await nodeFacts(new HostFs(h.root), { nowMs: NOW });
  t.match(f.certificates[0], { role: 'client', path: '/var/lib/rancher/rke2/agent/client-kubelet.crt', present: false, error: 'absent', subject: null, source: /kubelet\.kubeconfig client-certificate/ });
});

t.test('k3s: kubelet inside the k3s process: the kubeconfig k3s writes, from its known path', async (t) => {
  const h = distroHost('k3s');
  t.teardown(h.cleanup);
  const agent = path.join(h.root, 'var/lib/rancher/k3s/agent');
  writeFileSync(path.join(agent, 'client-kubelet.crt'), k3s.cert + k3s.ca);
  writeFileSync(path.join(agent, 'client-kubelet.key'), k3s.key);
  const f = await nodeFacts(new HostFs(h.root), { nowMs: NOW });
  t.match(f.certificates[0], {
    role: 'client',
    path: '/var/lib/rancher/k3s/agent/client-kubelet.crt',
    present: true,
    subject: 'CN=system:node:k3s-server-1, O=system:nodes',
    issuer: 'CN=k3s-client-ca@1700000000',
    secondsLeft: 265 * 86400,
    source: 'kubelet --kubeconfig /var/lib/rancher/k3s/agent/kubelet.kubeconfig client-certificate (known path (k3s runs kubelet in its own process))',
  });
  noKey(t, f.certificates, k3s.key);
});

t.test('kubeadm: kubelet.conf names kubelet-client-current.pem, the link to the dated cert+key file', async (t) => {
  const fx = await factsHost('systemd'); // kubelet --kubeconfig=/etc/kubernetes/kubelet.conf, the link to a dated file holding cert + key
  t.teardown(fx.cleanup);
  const before = await nodeFacts(new HostFs(fx.root), { nowMs: NOW });
  t.match(before.certificates[0], { path: '/var/lib/kubelet/pki/kubelet-client-current.pem', present: true, source: "--cert-dir /var/lib/kubelet/pki (kubelet's default); kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): absent" }, 'no kubelet.conf: the cert dir, and why');
  writeFileSync(path.join(fx.root, 'etc/kubernetes/kubelet.conf'), KUBELET_CONF);
  const f = await nodeFacts(new HostFs(fx.root), { nowMs: NOW });
  const c = f.certificates[0]!;
  t.match(c, {
    role: 'client',
    path: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    target: '/var/lib/kubelet/pki/kubelet-client-2025-11-29-19-45-00.pem',
    present: true,
    subject: 'CN=system:node:node-a, O=system:nodes',
    secondsLeft: -2 * 86400,
    error: null,
  });
  t.equal(c.source, 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf client-certificate (/proc/702/cmdline)');
  t.notMatch(JSON.stringify(f), /PRIVATE KEY/, 'the dated file holds the key: never returned');
});

t.test('client-certificate-data: the embedded PEM, path the kubeconfig, the key data never returned', async (t) => {
  const h = host(t);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  h.write('etc/kubernetes/kubelet.conf', KUBELET_CONF.replace(/ {4}client-certificate: .*\n {4}client-key: .*\n/, `    client-certificate-data: ${b64(k3s.cert + k3s.ca)}\n    client-key-data: ${b64(k3s.key)}\n`));
  const c = await client(h.root, KC_FLAG('/etc/kubernetes/kubelet.conf'));
  t.match(c, {
    role: 'client',
    path: '/etc/kubernetes/kubelet.conf',
    target: null,
    present: true,
    subject: 'CN=system:node:k3s-server-1, O=system:nodes',
    issuer: 'CN=k3s-client-ca@1700000000',
    notAfterSeconds: secs(NOW + 265 * DAY),
    error: null,
    source: 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf client-certificate-data (/proc/702/cmdline)',
  });
  noKey(t, c, k3s.key);
  t.notOk(JSON.stringify(c).includes(b64(k3s.key).slice(0, 40)), 'nor client-key-data');
});

t.test('client-certificate-data that is not a certificate: a key alone, a broken block', async (t) => {
  const h = host(t);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  h.write('a.conf', `users:\n- name: u\n  user:\n    client-certificate-data: ${b64(k3s.key)}\n`);
  const c = await client(h.root, KC_FLAG('/a.conf'));
  t.match(c, { path: '/a.conf', present: true, subject: null, notAfterSeconds: null, error: 'no CERTIFICATE block in it', source: /client-certificate-data/ });
  noKey(t, c, k3s.key);
  h.write('b.conf', `users:\n- name: u\n  user:\n    client-certificate-data: ${b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')}\n`);
  t.match(await client(h.root, KC_FLAG('/b.conf')), { present: true, error: /^not a certificate/ });
  h.write('c.conf', 'users:\n- name: u\n  user:\n    client-certificate-data: "%%% not base64 %%%"\n');
  t.same(await client(h.root, KC_FLAG('/c.conf')), {
    ...noCertificate('client', '/c.conf'),
    error: 'client-certificate-data of user "u" is not base64',
    source: 'kubelet --kubeconfig /c.conf client-certificate-data (/proc/702/cmdline)',
  });
});

t.test('EKS-style exec user: no certificate in the kubeconfig, the cert dir read, and why', async (t) => {
  const h = host(t);
  h.write('var/lib/kubelet/kubeconfig', 'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority: /etc/kubernetes/pki/ca.crt\n    server: https://example.eks.amazonaws.com\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: kubelet\n  name: kubelet\ncurrent-context: kubelet\nusers:\n- name: kubelet\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [eks, get-token, --cluster-name, prod, --region, us-west-2]\n');
  const eks = KC_FLAG('/var/lib/kubelet/kubeconfig', 1620);
  t.same(await client(h.root, eks), {
    ...noCertificate('client', '/var/lib/kubelet/pki/kubelet-client-current.pem'),
    error: 'absent',
    source: "--cert-dir /var/lib/kubelet/pki (kubelet's default); kubelet --kubeconfig /var/lib/kubelet/kubeconfig (/proc/1620/cmdline): user \"kubelet\" has exec credentials, no client certificate",
  });
  h.write('var/lib/kubelet/pki/kubelet-client-current.pem', decoy.cert + decoy.key);
  t.match(await client(h.root, eks), { path: '/var/lib/kubelet/pki/kubelet-client-current.pem', present: true, subject: /CN=system:node:decoy/, source: /exec credentials/ });
});

t.test('hostile kubeconfigs: the cert dir read instead, with the reason; nothing thrown', async (t) => {
  const h = host(t);
  h.write('var/lib/kubelet/pki/kubelet-client-current.pem', decoy.cert);
  const bomb = `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nusers: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n`;
  const cases: Array<[string, string, RegExp]> = [
    ['huge.conf', `${KUBELET_CONF}#${'x'.repeat(200_000)}\n`, /: \d+ bytes, over the 65536-byte bound: skipped$/],
    ['junk.conf', '\u0000\u00ff{{{ ]]]', /: not YAML \(|: not a kubeconfig mapping$/],
    ['bomb.conf', bomb, /: not YAML \(.*alias/i],
    ['list.conf', '- users\n', /: not a kubeconfig mapping$/],
    ['nouser.conf', KUBELET_CONF.replace('name: default-auth', 'name: someone-else'), /: no user "default-auth"$/],
    ['types.conf', 'current-context: 12\nusers: [{name: a}]\n', /: current-context is a number, not a name$/],
  ];
  for (const [name, text, reason] of cases) {
    h.write(`etc/kubernetes/${name}`, text);
    const c = await client(h.root, KC_FLAG(`/etc/kubernetes/${name}`));
    t.match(c, { path: '/var/lib/kubelet/pki/kubelet-client-current.pem', present: true, subject: /decoy/, source: /^--cert-dir \/var\/lib\/kubelet\/pki \(kubelet's default\); kubelet --kubeconfig / }, name);
    t.match(c.source, reason, name);
  }
});

t.test('hostile paths: a NUL, a \'..\', a link out of the host root, a directory: never read outside it', async (t) => {
  const h = host(t);
  h.write('var/lib/kubelet/pki/kubelet-client-current.pem', decoy.cert);
  // a real certificate outside the host root: never read
  writeFileSync(path.join(h.base, 'outside.pem'), rke2.cert);
  const user = (cert: string) => `users:\n- name: u\n  user:\n    client-certificate: ${JSON.stringify(cert)}\n`;
  const at = async (name: string, cert: string) => {
    h.write(`etc/${name}.conf`, user(cert));
    return client(h.root, KC_FLAG(`/etc/${name}.conf`));
  };
  t.match(await at('nul', '/var/lib/kubelet/pki/kubelet-client-current.pem\u0000x'), { path: '/etc/nul.conf', present: false, error: 'client-certificate of user "u" has a NUL byte: not read' });
  t.match(await at('dotdot', '../../outside.pem'), { path: '/etc/dotdot.conf', present: false, error: /has a '\.\.' component: not read$/ });
  mkdirSync(path.join(h.root, 'etc/pki'), { recursive: true });
  symlinkSync('../../../outside.pem', path.join(h.root, 'etc/pki/climb.pem'));
  symlinkSync(path.join(h.base, 'outside.pem'), path.join(h.root, 'etc/pki/abs.pem'));
  for (const [name, target] of [['climb', '/outside.pem'], ['abs', path.join(h.base, 'outside.pem')]] as const) {
    const c = await at(name, `pki/${name}.pem`);
    t.match(c, { path: `/etc/pki/${name}.pem`, present: false, subject: null }, `${name}: resolved inside the host root`);
    t.equal(c.target, target);
    t.equal(c.error, 'absent', `${name}: the host root has nothing there`);
  }
  mkdirSync(path.join(h.root, 'etc/pki/dir.pem'));
  t.match(await at('dir', '/etc/pki/dir.pem'), { present: false, error: 'unreadable (EFTYPE)' });
});

t.test('no kubeconfig known: the cert dir, as before; a reader that throws is an answer, not a throw', async (t) => {
  const h = host(t);
  h.write('var/lib/kubelet/pki/kubelet-client-current.pem', decoy.cert);
  t.match(await client(h.root, null), { present: true, source: "--cert-dir /var/lib/kubelet/pki (kubelet's default)" });
  const boom = () => Promise.reject(Object.assign(new Error('boom'), { code: 'EIO' }));
  const fs = { openFile: boom, readlink: boom, readFile: boom } as unknown as HostFs;
  const certs: KubeletCertificate[] = await kubeletCertificates(fs, null, NOW, CERT_DIR, KC_FLAG('/etc/kubernetes/kubelet.conf'));
  t.match(certs[0], { role: 'client', path: '/var/lib/kubelet/pki/kubelet-client-current.pem', present: false, error: 'unreadable (EIO)', source: /kubelet --kubeconfig \/etc\/kubernetes\/kubelet\.conf \(\/proc\/702\/cmdline\): refused \(EIO\)$/ });
  t.match(certs[1], { role: 'serving', error: 'unreadable (EIO)' });
});

t.test('certificateIn / readCertificate: the first CERTIFICATE block of a text, over the base given', async (t) => {
  const c = certificateIn({ ...noCertificate('client', '/k.conf'), target: null }, k3s.key + k3s.cert + k3s.ca, NOW);
  t.match(c, { path: '/k.conf', present: true, subject: /k3s-server-1/, issuer: 'CN=k3s-client-ca@1700000000' }, 'the leaf even after the key');
  const h = host(t);
  h.write('x.pem', rke2.cert);
  t.match(await readCertificate(new HostFs(h.root), 'client', '/x.pem', NOW), { present: true, secondsLeft: 2 * 86400 });
});
