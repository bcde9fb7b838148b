/**
 * Which client certificate kubelet's kubeconfig names, on the shapes the distributions
 * write (test/fixtures/hosts/README.md: rke2's and k3s' kubelet.kubeconfig; kubelet's own
 * TLS bootstrap output on kubeadm nodes) and on hostile files: wrong types, alias bombs,
 * not YAML, too big, a NUL or '..' in a path, base64 that is not base64. Every answer is
 * a reference or a reason; nothing throws, no secret of the file is echoed.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { NodeOs, Sourced } from '../../../src/model/node.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { clientCertOfText, K3S_KUBELET_KUBECONFIG, kubeconfigUser, kubeletClientCert, kubeletKubeconfig, MAX_KUBECONFIG_BYTES, type ClientCertRef } from '../../../src/readers/node/kubeconfig.js';
import { KUBELET_CONF } from '../../fixtures/kubeconfig.js';

const fixture = (p: string) => readFileSync(new URL(`../../fixtures/hosts/${p}`, import.meta.url), 'utf8');
const KUBEADM: Sourced = { value: '/etc/kubernetes/kubelet.conf', source: 'kubelet --kubeconfig (/proc/702/cmdline)' };
const RKE2: Sourced = { value: '/var/lib/rancher/rke2/agent/kubelet.kubeconfig', source: 'kubelet --kubeconfig (/proc/1240/cmdline)' };

/** a kubeconfig of one user whose body is `user` (YAML lines, indented under `user:`) */
const oneUser = (user: string, extra = '') => `apiVersion: v1
kind: Config
clusters:
- cluster: {server: 'https://10.0.0.1:6443'}
  name: c
contexts:
- context: {cluster: c, user: kubelet}
  name: ctx
current-context: ctx
users:
- name: kubelet
  user:
${user.replace(/^/gm, '    ')}
${extra}`;

const why = (r: ClientCertRef) => (r.kind === 'none' ? r.why : `not a fallback: ${JSON.stringify(r)}`);
const err = (r: ClientCertRef) => (r.kind === 'bad' ? r.error : `not an error: ${JSON.stringify(r)}`);

t.test('kubeadm (kubelet TLS bootstrap): the user of current-context names the rotated link', async (t) => {
  t.same(clientCertOfText(KUBELET_CONF, KUBEADM), {
    kind: 'file',
    path: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    source: 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf client-certificate (/proc/702/cmdline)',
  });
});

t.test('rke2 and k3s: the kubeconfig k3s agent code writes names client-kubelet.crt beside it', async (t) => {
  t.same(clientCertOfText(fixture('rke2/var/lib/rancher/rke2/agent/kubelet.kubeconfig'), RKE2), {
    kind: 'file',
    path: '/var/lib/rancher/rke2/agent/client-kubelet.crt',
    source: 'kubelet --kubeconfig /var/lib/rancher/rke2/agent/kubelet.kubeconfig client-certificate (/proc/1240/cmdline)',
  });
  t.same(clientCertOfText(fixture('k3s/var/lib/rancher/k3s/agent/kubelet.kubeconfig'), K3S_KUBELET_KUBECONFIG), {
    kind: 'file',
    path: '/var/lib/rancher/k3s/agent/client-kubelet.crt',
    source: 'kubelet --kubeconfig /var/lib/rancher/k3s/agent/kubelet.kubeconfig client-certificate (known path (k3s runs kubelet in its own process))',
  });
});

t.test('a relative client-certificate resolves against the kubeconfig file\'s directory, as client-go does', async (t) => {
  t.match(clientCertOfText(oneUser('client-certificate: pki/kubelet.pem'), KUBEADM), { kind: 'file', path: '/etc/kubernetes/pki/kubelet.pem' });
  t.match(clientCertOfText(oneUser('client-certificate: ./kubelet.pem'), KUBEADM), { kind: 'file', path: '/etc/kubernetes/kubelet.pem' });
  t.match(clientCertOfText(oneUser('client-certificate: //var//lib/./kubelet/pki/x.pem'), KUBEADM), { kind: 'file', path: '/var/lib/kubelet/pki/x.pem' });
});

t.test('client-certificate-data: decoded strictly; it wins over client-certificate, as in client-go', async (t) => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const b64 = Buffer.from(pem).toString('base64');
  t.same(clientCertOfText(oneUser(`client-certificate-data: ${b64}\nclient-key-data: ${Buffer.from('KEY').toString('base64')}`), KUBEADM), {
    kind: 'data',
    pem,
    source: 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf client-certificate-data (/proc/702/cmdline)',
  });
  const both = clientCertOfText(oneUser(`client-certificate: /x.pem\nclient-certificate-data: ${b64}`), KUBEADM);
  t.match(both, { kind: 'data', pem, source: /client-certificate-data .*client-certificate is set too, which client-go refuses/ });
  // Go's decoder skips line breaks only
  t.match(clientCertOfText(oneUser(`client-certificate-data: "${b64.slice(0, 20)}\\n${b64.slice(20)}"`), KUBEADM), { kind: 'data', pem });
});

t.test('no certificate in the user: exec (EKS), a token, nothing: a reason for the cert-dir fallback, no secret in it', async (t) => {
  // the shape nodeadm and eksctl write: an exec plugin that prints a token
  const eks = oneUser('exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: aws\n  args: [eks, get-token, --cluster-name, prod, --region, us-west-2]');
  t.equal(why(clientCertOfText(eks, { value: '/var/lib/kubelet/kubeconfig', source: 'kubelet --kubeconfig (/proc/1620/cmdline)' })), 'kubelet --kubeconfig /var/lib/kubelet/kubeconfig (/proc/1620/cmdline): user "kubelet" has exec credentials, no client certificate');
  const token = why(clientCertOfText(oneUser('token: s3cr3t-t0ken-value'), KUBEADM));
  t.equal(token, 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): user "kubelet" has a bearer token, no client certificate');
  t.notMatch(token, /s3cr3t/);
  t.match(why(clientCertOfText(oneUser('tokenFile: /var/run/token'), KUBEADM)), /has a bearer token/);
  t.match(why(clientCertOfText(oneUser('auth-provider: {name: gcp}'), KUBEADM)), /has an auth-provider/);
  t.match(why(clientCertOfText(oneUser('username: admin\npassword: hunter2'), KUBEADM)), /has a username and password/);
  t.match(why(clientCertOfText(oneUser('{}'), KUBEADM)), /has no credentials, no client certificate/);
  t.match(why(clientCertOfText(oneUser('null'), KUBEADM)), /has no credentials/);
  t.match(why(clientCertOfText(oneUser('client-certificate: ""'), KUBEADM)), /has no credentials/, 'an empty path is no path');
});

t.test('which user: current-context\'s, else the only one; otherwise why not', async (t) => {
  t.match(kubeconfigUser({ users: [{ name: 'solo', user: { 'client-certificate': '/a.pem' } }] }), { name: 'solo', user: { 'client-certificate': '/a.pem' } }, 'no current-context: the only user');
  t.equal(kubeconfigUser({ users: [{ name: 'a' }, { name: 'b' }] }), 'no current-context, and 2 users');
  t.equal(kubeconfigUser({ 'current-context': 'gone', contexts: [], users: [{ name: 'a' }] }), 'current-context "gone": no such context');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: [{ name: 'c', context: { user: 'ghost' } }], users: [{ name: 'a' }] }), 'no user "ghost"');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: [{ name: 'c', context: {} }], users: [{ name: 'a' }] }), 'context "c" names no user');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: [{ name: 'c', context: { user: 'a' } }, { name: 'c', context: { user: 'a' } }], users: [{ name: 'a' }] }), 'context "c" defined 2 times (client-go refuses the file)');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: [{ name: 'c', context: { user: 'a' } }], users: [{ name: 'a' }, { name: 'a' }] }), 'user "a" defined 2 times (client-go refuses the file)');
  t.equal(kubeconfigUser({}), 'no users');
  t.match(why(clientCertOfText(KUBELET_CONF.replace('current-context: default-context', 'current-context: other'), KUBEADM)), /: current-context "other": no such context$/);
});

t.test('hostile: wrong types where strings, lists and mappings belong', async (t) => {
  t.equal(kubeconfigUser({ users: { name: 'a' } }), 'users is a mapping, not a list');
  t.equal(kubeconfigUser({ users: 'a' }), 'users is a string, not a list');
  t.equal(kubeconfigUser({ 'current-context': 7, users: [{ name: 'a' }] }), 'current-context is a number, not a name');
  t.equal(kubeconfigUser({ 'current-context': ['c'], users: [{ name: 'a' }] }), 'current-context is a list, not a name');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: [{ name: 'c', context: { user: 5 } }], users: [{ name: 'a' }] }), 'context "c" names no user');
  t.equal(kubeconfigUser({ 'current-context': 'c', contexts: 'c', users: [{ name: 'a' }] }), 'current-context "c": no such context');
  t.equal(kubeconfigUser({ users: [['a']] }), 'its only user is a list, not a mapping');
  t.equal(kubeconfigUser({ users: [{ name: 'a', user: 'cert.pem' }] }), 'user "a" is a string, not a mapping');
  t.equal(kubeconfigUser({ users: [{ name: 'a', user: [1] }] }), 'user "a" is a list, not a mapping');
  const source = 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf client-certificate (/proc/702/cmdline)';
  t.same(clientCertOfText(oneUser('client-certificate: 12345'), KUBEADM), { kind: 'bad', error: 'client-certificate of user "kubelet" is a number, not a path', source });
  t.equal(err(clientCertOfText(oneUser('client-certificate: [/a.pem, /b.pem]'), KUBEADM)), 'client-certificate of user "kubelet" is a list, not a path');
  t.equal(err(clientCertOfText(oneUser('client-certificate: {path: /a.pem}'), KUBEADM)), 'client-certificate of user "kubelet" is a mapping, not a path');
  t.equal(err(clientCertOfText(oneUser('client-certificate: true'), KUBEADM)), 'client-certificate of user "kubelet" is a boolean, not a path');
  t.equal(err(clientCertOfText(oneUser('client-certificate-data: 42'), KUBEADM)), 'client-certificate-data of user "kubelet" is a number, not base64 text');
  t.equal(err(clientCertOfText(oneUser('client-certificate-data: [a]'), KUBEADM)), 'client-certificate-data of user "kubelet" is a list, not base64 text');
  t.equal(err(clientCertOfText(oneUser('client-certificate-data: !!binary aGVsbG8='), KUBEADM)), 'client-certificate-data of user "kubelet" is binary, not base64 text');
});

t.test('hostile: a NUL, a \'..\' component, an endless path: refused, never read', async (t) => {
  t.equal(err(clientCertOfText(oneUser('client-certificate: "/var/lib/kubelet/pki/a.pem\\0/etc/shadow"'), KUBEADM)), 'client-certificate of user "kubelet" has a NUL byte: not read');
  t.equal(err(clientCertOfText(oneUser('client-certificate: ../../../../etc/shadow'), KUBEADM)), 'client-certificate "../../../../etc/shadow" of user "kubelet" has a \'..\' component: not read');
  t.equal(err(clientCertOfText(oneUser('client-certificate: /var/lib/kubelet/../../etc/shadow'), KUBEADM)), 'client-certificate "/var/lib/kubelet/../../etc/shadow" of user "kubelet" has a \'..\' component: not read');
  t.match(clientCertOfText(oneUser('client-certificate: /var/lib/kubelet/pki/..pem'), KUBEADM), { kind: 'file', path: '/var/lib/kubelet/pki/..pem' }, "'..' inside a name is a name");
  t.equal(err(clientCertOfText(oneUser(`client-certificate: /${'a'.repeat(5000)}`), KUBEADM)), 'client-certificate of user "kubelet" is 5001 characters long: not read');
});

t.test('hostile: base64 that is not base64', async (t) => {
  for (const v of ['not base64 at all!', 'QUJD', 'QUJ', 'QU=JD', '====', '"QUJD RA=="', '"QUJD\\tRA=="']) {
    const r = clientCertOfText(oneUser(`client-certificate-data: ${v}`), KUBEADM);
    if (v === 'QUJD') t.match(r, { kind: 'data', pem: 'ABC' }, 'valid base64 of a non-PEM: decoded, judged by the certificate parser');
    else t.equal(err(r), 'client-certificate-data of user "kubelet" is not base64', v);
  }
});

t.test('hostile: not YAML, not a mapping, an alias bomb: a reason, never a throw', async (t) => {
  const bomb = `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nusers: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n`;
  t.match(why(clientCertOfText(bomb, KUBEADM)), /^kubelet --kubeconfig \/etc\/kubernetes\/kubelet\.conf \(\/proc\/702\/cmdline\): not YAML \(.*alias/i);
  t.match(why(clientCertOfText('users: [\n  - {name: a\n', KUBEADM)), /: not YAML \(/);
  t.equal(why(clientCertOfText('just a string', KUBEADM)), 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): not a kubeconfig mapping');
  t.equal(why(clientCertOfText('- a\n- b\n', KUBEADM)), 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): not a kubeconfig mapping');
  t.equal(why(clientCertOfText('', KUBEADM)), 'kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): not a kubeconfig mapping');
  t.equal(why(clientCertOfText('\u0000\u0001\u0002', KUBEADM)).startsWith('kubelet --kubeconfig /etc/kubernetes/kubelet.conf (/proc/702/cmdline): '), true, 'binary junk');
});

t.test('the kubeconfig file: bounded, inside the host root, its path checked', async (t) => {
  const base = mkdtempSync(path.join(tmpdir(), 'nodetruth-kubeconfig-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const root = path.join(base, 'root');
  mkdirSync(path.join(root, 'etc/kubernetes'), { recursive: true });
  const fs = new HostFs(root);
  const at = (value: string): Sourced => ({ value, source: 'kubelet --kubeconfig (/proc/702/cmdline)' });

  writeFileSync(path.join(root, 'etc/kubernetes/kubelet.conf'), KUBELET_CONF);
  t.match(await kubeletClientCert(fs, at('/etc/kubernetes/kubelet.conf')), { kind: 'file', path: '/var/lib/kubelet/pki/kubelet-client-current.pem' });

  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/absent.conf'))), 'kubelet --kubeconfig /etc/kubernetes/absent.conf (/proc/702/cmdline): absent');
  // over the bound: skipped whole, never cut (a cut file could parse to another user)
  writeFileSync(path.join(root, 'etc/kubernetes/big.conf'), KUBELET_CONF + `# ${'x'.repeat(MAX_KUBECONFIG_BYTES)}\n`);
  t.match(why(await kubeletClientCert(fs, at('/etc/kubernetes/big.conf'))), new RegExp(`^kubelet --kubeconfig /etc/kubernetes/big\\.conf \\(/proc/702/cmdline\\): \\d+ bytes, over the ${MAX_KUBECONFIG_BYTES}-byte bound: skipped$`));
  mkdirSync(path.join(root, 'etc/kubernetes/dir.conf'));
  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/dir.conf'))), 'kubelet --kubeconfig /etc/kubernetes/dir.conf (/proc/702/cmdline): refused (EFTYPE)');
  // a link out of the host root: resolved inside it (absent there), never the agent's own file
  writeFileSync(path.join(base, 'outside.conf'), oneUser('client-certificate: /outside.pem'));
  symlinkSync(path.join(base, 'outside.conf'), path.join(root, 'etc/kubernetes/link.conf'));
  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/link.conf'))), 'kubelet --kubeconfig /etc/kubernetes/link.conf (/proc/702/cmdline): absent');
  symlinkSync('../../../../outside.conf', path.join(root, 'etc/kubernetes/climb.conf'));
  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/climb.conf'))), 'kubelet --kubeconfig /etc/kubernetes/climb.conf (/proc/702/cmdline): absent');
  // a link inside the root is followed; relative paths still resolve against the path kubelet was given
  mkdirSync(path.join(root, 'srv'), { recursive: true });
  writeFileSync(path.join(root, 'srv/real.conf'), oneUser('client-certificate: pki/k.pem'));
  symlinkSync('/srv/real.conf', path.join(root, 'etc/kubernetes/inner.conf'));
  t.match(await kubeletClientCert(fs, at('/etc/kubernetes/inner.conf')), { kind: 'file', path: '/etc/kubernetes/pki/k.pem' });

  t.equal(why(await kubeletClientCert(fs, at('kubelet.conf'))), 'kubelet --kubeconfig "kubelet.conf" (/proc/702/cmdline): not an absolute path, not read');
  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/../../outside.conf'))), 'kubelet --kubeconfig "/etc/kubernetes/../../outside.conf" (/proc/702/cmdline): a NUL byte or a \'..\' component, not read');
  t.equal(why(await kubeletClientCert(fs, at('/etc/kubernetes/kubelet.conf\0x'))), 'kubelet --kubeconfig "/etc/kubernetes/kubelet.conf\\u0000x" (/proc/702/cmdline): a NUL byte or a \'..\' component, not read');
});

t.test('which kubeconfig: kubelet\'s flag, else k3s\' own when kubelet runs inside k3s', async (t) => {
  const os = (kubelet: Partial<NodeOs['kubelet']>, flavor: string | null) => ({ kubelet: { kubeconfig: null, flagsFrom: null, ...kubelet }, flavor: flavor ? { name: flavor, evidence: 'x' } : null }) as unknown as NodeOs;
  t.equal(kubeletKubeconfig(undefined), null);
  t.same(kubeletKubeconfig(os({ kubeconfig: RKE2, flagsFrom: '/proc/1240/cmdline' }, 'rke2')), RKE2);
  t.same(kubeletKubeconfig(os({}, 'k3s')), K3S_KUBELET_KUBECONFIG);
  t.equal(kubeletKubeconfig(os({ flagsFrom: '/proc/9/cmdline' }, 'k3s')), null, 'a kubelet command line without --kubeconfig: no guess');
  t.equal(kubeletKubeconfig(os({}, null)), null);
});
