/**
 * GET /v1/oom through the real app over a memory.oom.group report (kubelet sets
 * memory.oom.group=1 in application containers): the kernel prints the victim's
 * "Killed process" line again after "Tasks in <cg> are going to be killed due to
 * memory.oom.group set", and one such line for each other task of the group.
 * The fixture is the real captured report with the two lines 6.1 prints after it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { kmsgFixture } from '../../fixtures/kmsg/oom-reports.js';
import { testApp } from '../../helpers/app.js';

const POD_UID = 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8';
const ID = 'a98aedb44857ac811d725fffb9f71f065b13711cf0e6aa365712cc9d36740c44';
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-oom-group-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const group = readFileSync(kmsgFixture('oom-group-6.1.0-57-amd64.kmsg'), 'utf8');
const victimAgain = group.trimEnd().split('\n').at(-1)!;
// then an exiting task (no kill) and a second task of the group, as __oom_kill_process prints them
const withMember =
  group +
  '6,570,289557402,-;Memory cgroup out of memory: OOM victim 940 (sh) is already exiting. Skip killing the task\n' +
  victimAgain.replace('3,569,289557301,', '3,571,289557520,').replace('Killed process 931 (dd)', 'Killed process 933 (sleep)') +
  '\n';
writeFileSync(path.join(dir, 'member.kmsg'), withMember);

async function kills(kmsg: string) {
  const a = await testApp(['--host-root', dir, '--kmsg-path', kmsg]);
  try {
    const r = await a.app.inject({ method: 'GET', url: '/v1/oom' });
    if (r.statusCode !== 200) throw new Error(r.body);
    return r.json().kills as Array<Record<string, unknown>>;
  } finally {
    await a.close();
  }
}

t.test('/v1/oom: the victim killed again by the group kill is one kill of its container', async (t) => {
  const k = await kills(kmsgFixture('oom-group-6.1.0-57-amd64.kmsg'));
  t.equal(k.length, 1);
  t.match(k[0], { pid: 931, process: 'dd', podUid: POD_UID, containerId: ID, evidence: { firstSeq: 515, lastSeq: 567 } });
});

t.test('/v1/oom: another task of the group is a second kill of the same container', async (t) => {
  const k = await kills(path.join(dir, 'member.kmsg'));
  t.equal(k.length, 2);
  t.match(k[0], { pid: 931, podUid: POD_UID, containerId: ID });
  t.match(k[1], { pid: 933, process: 'sleep', podUid: POD_UID, containerId: ID, evidence: { firstSeq: 515, lastSeq: 571 } });
});
