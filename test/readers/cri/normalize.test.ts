/** CRI message normalization, on responses captured from a real containerd 1.6.20 (test/fixtures/cri/). */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { unavailableCause } from '../../../src/readers/cri/errors.js';
import { resolvePrefix } from '../../../src/readers/cri/ids.js';
import { redactMap } from '../../../src/redact.js';
import {
  cgroupDriverOf,
  LIST_SLICE,
  MAX_INFO_JSON,
  nanosToRfc3339,
  parseInfo,
  toImage,
  toImageFsInfo,
  redactListed,
  toRuntimeStatus,
} from '../../../src/readers/cri/normalize.js';
import { containerd21Config, containerd21Status } from '../../fixtures/cri/containerd-2.1-status.js';

const capture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/cri/${name}`, import.meta.url), 'utf8'));

t.test('Status with verbose info', async (t) => {
  const s = toRuntimeStatus(capture('v1-status-verbose.json'));
  t.same(s.conditions, [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
  ]);
  t.equal(s.info.golang, 'go1.19.8', 'a JSON string value is parsed');
  t.same((s.info.cniconfig as { PluginDirs: string[] }).PluginDirs, ['/tmp/cri-spike/cni/bin']);
  t.equal(cgroupDriverOf(s.info), 'cgroupfs');
  t.equal(cgroupDriverOf({}), null, 'unknown without verbose config');
  t.equal(s.features, null, 'containerd 1.6 sends no RuntimeFeatures: null (not reported), never false');
  t.same(s.runtimeHandlers, [], 'nor runtime handlers');
  t.same(s.warnings, []);
});

t.test('cgroup driver from containerd 1.6 configs (the CRI plugin config)', async (t) => {
  const config = JSON.parse(capture('v1-status-verbose.json').info.config);
  const with16 = (f: (c: any) => void) => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const c = structuredClone(config);
    f(c);
    return cgroupDriverOf({ config: c });
  };
  t.equal(with16((c) => (c.containerd.runtimes.runc.options.SystemdCgroup = true)), 'systemd', 'runc options');
  t.equal(with16(() => {}), 'cgroupfs', 'as captured: SystemdCgroup false');
  t.equal(
    with16((c) => {
      c.containerd.runtimes.runc.runtimeType = 'io.containerd.runtime.v1.linux';
      c.systemdCgroup = true;
    }),
    'systemd',
    "the legacy v1 runtime: the plugin's top-level systemd_cgroup",
  );
  t.equal(with16((c) => (c.containerd.runtimes.runc.options.SystemdCgroup = 'yes')), null, 'a non-boolean does not decode: containerd skips the handler');
  t.equal(with16((c) => (c.containerd.runtimes = null)), null);
});

t.test('cgroup driver from a containerd 2.1 config (the runtime plugin config, RuntimeConfig embedded)', async (t) => {
  const c = containerd21Config();
  t.notOk('systemdCgroup' in c, '2.x has no top-level systemdCgroup');
  t.equal(cgroupDriverOf({ config: c }), 'systemd');
  t.equal(cgroupDriverOf({ config: 'not an object' }), null);
});

t.test('Status features as proto-loader decodes them (an unset message is null)', async (t) => {
  const wire = containerd21Status({}, [{ name: 'gone' }]);
  const s = toRuntimeStatus({ ...wire, features: { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false }, runtimeHandlers: [...wire.runtimeHandlers.map((h) => ({ features: null, ...h }))] });
  t.same(s.features, { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false });
  t.same(s.runtimeHandlers.find((h) => h.name === 'gone'), { name: 'gone', features: null });
  t.same(toRuntimeStatus({ status: { conditions: [] }, features: null, runtimeHandlers: [{ name: 7, features: 'x' }] }).runtimeHandlers, [{ name: '', features: null }], 'junk is not a feature');
});

t.test('ListImages and ImageFsInfo', async (t) => {
  const [img] = capture('v1-list-images-after-import.json').images.map(toImage);
  t.same(img, {
    id: 'sha256:005dd9993871635e263a377be255262fa3ab6d5dba78bc944cea454b80e3162d',
    repoTags: ['docker.io/library/busybox-spike:1.35.0'],
    repoDigests: [],
    size: 1987244,
    pinned: false,
    username: '',
    uid: null,
  });
  const fs = toImageFsInfo(capture('v1-image-fs-info-after-import.json'));
  t.same(fs.imageFilesystems, [
    { timestamp: '2026-11-29T17:38:37.905087686Z', mountpoint: '/tmp/cri-spike/root/io.containerd.snapshotter.v1.overlayfs', usedBytes: 1990656, inodesUsed: 4 },
  ]);
});

t.test('timestamps keep nanoseconds; 0 is unset', async (t) => {
  t.equal(nanosToRfc3339('1795973917905087686'), '2026-11-29T17:38:37.905087686Z');
  t.equal(nanosToRfc3339('1795973917000000001'), '2026-11-29T17:38:37.000000001Z');
  t.equal(nanosToRfc3339('0'), null);
  t.equal(nanosToRfc3339(undefined), null);
  // the string fast path agrees with the BigInt one at its edges and on the rest
  const viaBigInt = (s: string) => {
    const n = BigInt(s);
    return `${new Date(Number(n / 1_000_000_000n) * 1000).toISOString().slice(0, 19)}.${(n % 1_000_000_000n).toString().padStart(9, '0')}Z`;
  };
  for (const s of ['1000000000', '1999999999', '9223372036854775807', '1795973917000000000', '1700000000123456789', '5', '999999999']) t.equal(nanosToRfc3339(s), viaBigInt(s), s);
  t.equal(nanosToRfc3339(1795973917), viaBigInt('1795973917'), 'a number takes the BigInt path');
  t.equal(nanosToRfc3339('-5'), null);
  t.equal(nanosToRfc3339('0001795973917905087686'), '2026-11-29T17:38:37.905087686Z', 'leading zeros: the BigInt path');
});

t.test('lists are redacted in slices: the same records as one by one, a yield every LIST_SLICE items', async (t) => {
  const item = (i: number) => ({
    id: `${i}`.padStart(64, 'c'),
    labels: { 'io.kubernetes.pod.name': `pod-${i >> 2}` },
    annotations: { 'example.com/api-token': 'hunter2', 'io.kubernetes.container.restartCount': '0' },
  });
  const items = Array.from({ length: 2 * LIST_SLICE + 1 }, (_, i) => item(i));
  const oneByOne = items.map((c) => ({ ...c, labels: redactMap(c.labels), annotations: redactMap(c.annotations) }));
  let pauses = 0;
  const out = await redactListed(items, async () => pauses++);
  t.same(out, oneByOne);
  // one a LIST_SLICE items at least (more when a slice runs past lib/turns' SLICE_MS on a slow machine)
  t.ok(pauses >= 2, `${items.length} items: ${pauses + 1} slices`);
  t.not(out[7]!.annotations['example.com/api-token'], 'hunter2', 'redacted');
  t.equal(out[7]!.annotations['io.kubernetes.container.restartCount'], '0', 'a kubelet annotation kept');
});

t.test('info values that are not JSON stay text', async (t) => {
  t.same(parseInfo({ a: '{"x":1}', b: 'plain', c: '"quoted"' }), { a: { x: 1 }, b: 'plain', c: 'quoted' });
  t.same(parseInfo(undefined), {});
});

t.test('grpc-js UNAVAILABLE details shortened to the errno (captures/cri/failure-modes.json)', async (t) => {
  t.equal(
    unavailableCause('No connection established. Last error: Error: connect ENOENT /tmp/cri-spike/does-not-exist.sock. Resolution note: '),
    'connect ENOENT /tmp/cri-spike/does-not-exist.sock',
  );
  t.equal(unavailableCause('No connection established. Last error: connect ECONNREFUSED /x.sock'), 'connect ECONNREFUSED /x.sock');
  t.equal(unavailableCause('something else'), 'something else');
});

t.test('prefix resolution', async (t) => {
  const items = [{ id: 'abc1' }, { id: 'abc2' }, { id: 'abd' }, { id: 'ab' }];
  t.equal(resolvePrefix(items, 'abc1', 'container').id, 'abc1');
  t.equal(resolvePrefix(items, 'ab', 'container').id, 'ab', 'an exact id wins over longer ids it prefixes');
  t.equal(resolvePrefix(items, 'abd', 'container').id, 'abd');
  const thrown = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return err;
    }
    return null;
  };
  // a source speaks codes, not HTTP statuses (src/errors.ts maps them: 409, 404)
  t.match(thrown(() => resolvePrefix(items, 'abc', 'container')), { name: 'SourceError', code: 'ambiguous_id', candidates: ['abc1', 'abc2'], message: /2 containers match id prefix abc/ });
  t.match(thrown(() => resolvePrefix(items, 'f', 'container')), { name: 'SourceError', code: 'not_found', message: /no container with id or id prefix f/ });
});

t.test('a verbose info value over the parse bound is reported, not parsed (JSON.parse holds the loop ~25 ms per MiB)', async (t) => {
  const big = JSON.stringify({ config: { pad: 'x'.repeat(MAX_INFO_JSON) } });
  const out = parseInfo({ info: big, small: '{"pid":42}' });
  t.match(out.info, /^<not parsed: \d+ characters, over the 2097152-character bound>$/);
  t.same(out.small, { pid: 42 }, 'the others are parsed as before');
});
