import t from 'tap';
import { parseKubepodsPath } from '../../../src/readers/cgroup/kubepods-path.js';

const UID = '7f3c2a10-1111-4222-8333-944455556666';
const UID_ = UID.replace(/-/g, '_');
const ID = '673bde83b04ced70dae6e97e90f84a7fb544cd24f1231d89a518a54f4f71f9b1';

t.test('systemd driver, burstable container (real node capture)', async (t) => {
  const p = `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/cri-containerd-${ID}.scope`;
  t.same(parseKubepodsPath(p), {
    driver: 'systemd',
    qos: 'burstable',
    podUid: UID,
    podCgroup: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice`,
    containerId: ID,
    runtime: 'cri-containerd',
    rest: '',
  });
});

t.test('systemd driver: guaranteed, besteffort, crio, docker, pod only, nested', async (t) => {
  const g = parseKubepodsPath(`/kubepods.slice/kubepods-pod${UID_}.slice/crio-${ID}.scope`);
  t.match(g, { qos: 'guaranteed', podUid: UID, containerId: ID, runtime: 'crio' });
  const be = parseKubepodsPath(`/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_}.slice/docker-${ID}.scope`);
  t.match(be, { qos: 'besteffort', containerId: ID, runtime: 'docker' });
  const pod = parseKubepodsPath(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice`);
  t.match(pod, { qos: 'burstable', podUid: UID, containerId: null, runtime: null, rest: '' });
  const nested = parseKubepodsPath(`/kubepods.slice/kubepods-pod${UID_}.slice/cri-containerd-${ID}.scope/sub/leaf`);
  t.match(nested, { containerId: ID, rest: '/sub/leaf' });
  const conmon = parseKubepodsPath(`/kubepods.slice/kubepods-pod${UID_}.slice/crio-conmon-${ID}.scope`);
  t.match(conmon, { podUid: UID, containerId: null, rest: `/crio-conmon-${ID}.scope` });
  const rooted = parseKubepodsPath(
    `/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod${UID_}.slice/cri-containerd-${ID}.scope`,
  );
  t.match(rooted, { driver: 'systemd', qos: 'besteffort', podUid: UID, containerId: ID });
});

t.test('cgroupfs driver', async (t) => {
  t.same(parseKubepodsPath(`/kubepods/burstable/pod${UID}/${ID}`), {
    driver: 'cgroupfs',
    qos: 'burstable',
    podUid: UID,
    podCgroup: `/kubepods/burstable/pod${UID}`,
    containerId: ID,
    runtime: null,
    rest: '',
  });
  t.match(parseKubepodsPath(`/kubepods/pod${UID}/${ID}`), { qos: 'guaranteed', containerId: ID });
  t.match(parseKubepodsPath(`/kubepods/besteffort/pod${UID}`), { qos: 'besteffort', containerId: null });
  t.match(parseKubepodsPath(`/kubepods/burstable/pod${UID}/crio-${ID}`), { containerId: ID, runtime: 'crio' });
});

t.test('not a pod cgroup', async (t) => {
  for (const p of [
    '/',
    '/system.slice/containerd.service',
    '/kubepods.slice',
    '/kubepods.slice/kubepods-burstable.slice',
    '/kubepods/burstable',
    `/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod${UID_}.slice`, // QoS mismatch
    '/kubepods.slice/kubepods-podnotauid.slice',
    `/user.slice/pod${UID}`,
  ]) {
    t.equal(parseKubepodsPath(p), null, p);
  }
});

t.test('static pods: a 32-hex UID in slice and cgroupfs names', async (t) => {
  const uid = '2f1ac5d2c0e6b0e6c9f3e9d5a4b3c2d1';
  const id = 'a'.repeat(64);
  t.match(parseKubepodsPath(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid}.slice/cri-containerd-${id}.scope`), { podUid: uid, qos: 'burstable', containerId: id });
  t.match(parseKubepodsPath(`/kubepods/pod${uid}/${id}`), { podUid: uid, qos: 'guaranteed', containerId: id });
});
