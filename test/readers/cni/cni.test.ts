/**
 * Where containerd says its CNI plugins are: from the real containerd 1.6.20 Status verbose
 * capture (`binDir`), and from containerd 2.1's shape as its source serializes it (`binDir: ""`
 * beside a `binDirs` list; test/fixtures/cri/containerd-2.1-status.ts, built from source).
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { cniDirsFromRuntimeInfo } from '../../../src/readers/cni/cni.js';
import { containerd21Config } from '../../fixtures/cri/containerd-2.1-status.js';

const captured16 = JSON.parse(readFileSync(new URL('../../fixtures/cri/v1-status-verbose.json', import.meta.url), 'utf8')) as { info: { config: string } };

t.test('containerd 1.6: binDir as captured', async (t) => {
  const config = JSON.parse(captured16.info.config) as Record<string, unknown>;
  t.same(cniDirsFromRuntimeInfo({ config }), { confDir: '/tmp/cri-spike/cni/net.d', binDir: '/tmp/cri-spike/cni/bin' });
});

t.test('containerd 2.x: binDir empty, the first of binDirs', async (t) => {
  t.same(cniDirsFromRuntimeInfo({ config: containerd21Config() }), { confDir: '/etc/cni/net.d', binDir: '/opt/cni/bin' });
  const two = containerd21Config() as { cni: Record<string, unknown> };
  two.cni.binDirs = ['', 42, '/usr/lib/cni', '/opt/cni/bin'];
  t.same(cniDirsFromRuntimeInfo({ config: two }), { confDir: '/etc/cni/net.d', binDir: '/usr/lib/cni' }, 'empty and non-string entries skipped');
});

t.test('nothing usable: null, so the defaults are used and said', async (t) => {
  t.equal(cniDirsFromRuntimeInfo(null), null);
  t.equal(cniDirsFromRuntimeInfo({ config: { cni: { confDir: '/etc/cni/net.d', binDir: '', binDirs: [] } } }), null);
  t.equal(cniDirsFromRuntimeInfo({ config: { cni: { confDir: '', binDir: '/opt/cni/bin' } } }), null);
  t.equal(cniDirsFromRuntimeInfo({ config: { cni: { confDir: '/etc/cni/net.d', binDirs: 'not-a-list' } } }), null);
});
