/**
 * /proc readers on this machine's real /proc: the test's own process and
 * children it spawns (one whose name has spaces and parentheses).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { NS_TYPES, type ProcessInfo } from '../../../src/model/process.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import {
  kbToBytes,
  parseCmdline,
  parseLoadavg,
  parseMeminfo,
  parseNsLink,
  parseProcStat,
  parseProcStatus,
  parseUptime,
} from '../../../src/readers/proc/parse.js';
import { classifyNamespaces, countProcesses, mainProcess, readNamespaces, readProcess } from '../../../src/readers/proc/proc.js';
import { readPidsSkipping } from '../../../src/view/container-processes.js';
import { redactCmdlines } from '../../../src/redact.js';

const fs = new HostFs('/');
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-proc-'));
const WEIRD = 'x) (y z';
const weirdBin = path.join(dir, WEIRD);
copyFileSync('/bin/sleep', weirdBin);
const { chmodSync } = await import('node:fs');
chmodSync(weirdBin, 0o755);

const children: ChildProcess[] = [];
const start = async (cmd: string, args: string[]) => {
  const c = spawn(cmd, args, { stdio: 'ignore' });
  children.push(c);
  await once(c, 'spawn');
  // wait until exec has replaced the forked node image: its cmdline is the one asked for
  // (comm is not enough: a node child's forked image is already called node)
  const want = [cmd, ...args].join('\0') + '\0';
  for (let i = 0; i < 2000; i++) {
    if (readFileSync(`/proc/${c.pid}/cmdline`, 'utf8') === want) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  return c;
};
t.teardown(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const sleeper = await start('/bin/sleep', ['1000']);
const weird = await start(weirdBin, ['999']);

t.test('own process', async (t) => {
  const me = await readProcess(fs, process.pid);
  t.ok(me);
  t.equal(me!.pid, process.pid);
  t.equal(me!.ppid, process.ppid);
  t.equal(me!.comm, readFileSync('/proc/self/comm', 'utf8').trim());
  t.same(me!.cmdline, readFileSync('/proc/self/cmdline', 'utf8').split('\0').slice(0, -1));
  // the main thread may be asleep in epoll while a libuv thread reads its stat: R or S, both true
  t.ok(me!.state === 'R' || me!.state === 'S', `state ${me!.state} is running or sleeping`);
  const tasks = readdirSync(`/proc/${process.pid}/task`).length;
  t.ok(Math.abs(me!.threads - tasks) <= 2, `threads ${me!.threads} ~ ${tasks} tasks`);
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
  t.ok(Math.abs(me!.rssBytes! - rss) < 16 * 1024 * 1024, `rss ${me!.rssBytes} ~ ${rss}`);
  t.ok(me!.startTicks > 0);
});

t.test('a child: sleep 1000', async (t) => {
  const p = await readProcess(fs, sleeper.pid!);
  t.match(p, { pid: sleeper.pid, ppid: process.pid, comm: 'sleep', cmdline: ['/bin/sleep', '1000'], state: 'S', threads: 1 });
  t.ok(p!.rssBytes! > 0 && p!.rssBytes! < 64 * 1024 * 1024);
});

t.test('a command line is read as the process set it; redactCmdlines takes its credentials (the routes apply it)', async (t) => {
  const script = 'setTimeout(() => {}, 1e6)';
  const child = await start(process.execPath, ['-e', script, '--', '--db-password=hunter2', '--token', 'hunter2', '--port=1']);
  const p = await readProcess(fs, child.pid!);
  t.same(p!.cmdline, [process.execPath, '-e', script, '--', '--db-password=hunter2', '--token', 'hunter2', '--port=1']);
  const [r] = redactCmdlines([p!]);
  t.same(r!.cmdline, [process.execPath, '-e', script, '--', '--db-password=<redacted>', '--token', '<redacted>', '--port=1']);
  t.notMatch(JSON.stringify(r), /hunter2/);
  t.equal(redactCmdlines([{ cmdline: ['/bin/sleep', '1000'] }])[0]!.cmdline[1], '1000');
});

t.test('a child whose name holds spaces and parentheses', async (t) => {
  const raw = readFileSync(`/proc/${weird.pid}/stat`, 'utf8');
  t.match(raw, `(${WEIRD}) S`, 'the kernel writes the name as is');
  const p = await readProcess(fs, weird.pid!);
  t.match(p, { pid: weird.pid, ppid: process.pid, comm: WEIRD, state: 'S', cmdline: [weirdBin, '999'], threads: 1 });
});

t.test('vanished pids are skipped, order is by pid', async (t) => {
  const gone = spawn('/bin/true', [], { stdio: 'ignore' });
  await once(gone, 'exit');
  await new Promise((r) => setTimeout(r, 20));
  t.equal(await readProcess(fs, gone.pid!), null);
  const warnings: string[] = [];
  const list = await readPidsSkipping(fs, [weird.pid!, gone.pid!, sleeper.pid!, process.pid, sleeper.pid!], {}, warnings);
  t.same(
    list.map((p) => p.pid),
    [weird.pid!, sleeper.pid!, process.pid].sort((a, b) => a - b),
  );
  t.same(warnings, [`pid ${gone.pid}: exited while the cgroup was read, skipped`]);
  await t.rejects(readProcess(fs, 0), RangeError);
  await t.rejects(readProcess(fs, -1), RangeError);
  await t.rejects(readProcess(fs, 1.5), RangeError);
});

t.test('namespaces of real processes', async (t) => {
  const mine = await readNamespaces(fs, process.pid);
  t.ok(mine);
  for (const type of NS_TYPES) {
    let link: string | null = null;
    try {
      link = readlinkSync(`/proc/${process.pid}/ns/${type}`);
    } catch {}
    if (link) t.equal(mine!.get(type), Number(/\[(\d+)\]/.exec(link)![1]), type);
  }
  // PID 1 may be out of reach (EACCES without CAP_SYS_PTRACE over it): then no host inodes, never an error.
  let hostReadable = true;
  try {
    readlinkSync('/proc/1/ns/net');
  } catch {
    hostReadable = false;
  }
  const host = await readNamespaces(fs, 1);
  t.equal(host !== null, hostReadable, `PID 1's namespaces ${hostReadable ? 'readable' : 'unreadable'} here`);
  const child = await classifyNamespaces(fs, sleeper.pid!, process.pid);
  t.ok(child && child.length >= 7);
  for (const ns of child!) {
    const expected = ns.inode === host?.get(ns.type) ? 'host' : ns.inode === mine!.get(ns.type) ? 'sandbox' : 'private';
    t.equal(ns.sharedWith, expected, `${ns.type}: ${ns.inode} (host ${ns.hostInode})`);
    t.equal(ns.sandboxInode, mine!.get(ns.type), 'the child shares every namespace with its parent');
  }
  t.equal(await readNamespaces(fs, 4_000_000), null, 'no such pid');
  t.equal(await classifyNamespaces(fs, 4_000_000, null), null);
});

t.test('counting processes', async (t) => {
  const n = await countProcesses(fs);
  const direct = readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length;
  t.ok(n !== null && Math.abs(n - direct) <= 3, `${n} ~ ${direct}`);
});

t.test('main process: parent outside the cgroup, earliest started', async (t) => {
  const p = (pid: number, ppid: number, startTicks: number) => ({ pid, ppid, startTicks }) as ProcessInfo;
  t.equal(mainProcess([p(20, 10, 5), p(10, 844, 1), p(30, 10, 9)])?.pid, 10);
  t.equal(mainProcess([p(20, 844, 5), p(10, 844, 7)])?.pid, 20, 'two roots: earliest');
  t.equal(mainProcess([p(20, 10, 5), p(10, 20, 7)])?.pid, 20, 'a cycle (pid reuse): earliest of all');
  t.equal(mainProcess([]), null);
});

t.test('parsers', async (t) => {
  t.same(parseProcStat('42 (a) b (c) S 1 42 42 0 -1 4194560 0 0 0 0 7 3 0 0 20 0 5 0 1234 1000 25 0'), {
    pid: 42,
    comm: 'a) b (c',
    state: 'S',
    ppid: 1,
    utimeTicks: 7,
    stimeTicks: 3,
    numThreads: 5,
    startTicks: 1234,
    rssPages: 25,
  });
  t.equal(parseProcStat(null), null);
  t.equal(parseProcStat('garbage'), null);
  t.equal(parseProcStat('1 (x) S 0'), null, 'too short');
  const status = parseProcStatus('Name:\tsleep\nVmRSS:\t       4 kB\nThreads:\t1\n');
  t.equal(status?.get('Name'), 'sleep');
  t.equal(kbToBytes(status?.get('VmRSS')), 4096);
  t.equal(kbToBytes(undefined), null);
  t.equal(parseProcStatus(null), null);
  t.same(parseCmdline('/bin/sh\0-c\0while :; do :; done\0'), ['/bin/sh', '-c', 'while :; do :; done']);
  t.same(parseCmdline('no-trailing-nul'), ['no-trailing-nul'], 'a process that rewrote its argv');
  t.same(parseCmdline(''), [], 'kernel thread');
  t.same(parseCmdline(null), []);
  t.same(parseLoadavg('1.02 0.83 0.41 3/187 1042\n'), { load1: 1.02, load5: 0.83, load15: 0.41, runnable: 3, threads: 187, lastPid: 1042 });
  t.equal(parseLoadavg('bad'), null);
  t.ok(parseLoadavg(readFileSync('/proc/loadavg', 'utf8')), 'this machine');
  const mem = parseMeminfo(readFileSync('/proc/meminfo', 'utf8'))!;
  t.ok(mem.get('MemTotal')! > mem.get('MemAvailable')!, 'this machine');
  t.equal(mem.get('HugePages_Total'), Number(/HugePages_Total:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]), 'unitless lines kept as counts');
  t.equal(parseMeminfo(null), null);
  t.same(parseUptime('350735.47 234388.90\n'), { uptimeSeconds: 350735.47, idleSeconds: 234388.9 });
  t.equal(parseUptime('x'), null);
  t.equal(parseUptime(null), null);
  t.same(parseNsLink('pid:[4026531836]'), { type: 'pid', inode: 4026531836 });
  t.equal(parseNsLink('/etc/passwd'), null);
  t.equal(parseNsLink(null), null);
});
