// Boots the node guest under qemu (TCG: /dev/kvm here is a software PVM, no stock kernel),
// runs commands in it through the 9p share, and always cleans up: qemu is stopped by the
// PID from its own pidfile, never by name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GuestImage } from './image.js';
import { cacheRoot } from './image.js';
import { GiveUp, log, runOk, sleep, tailFile, waitFor } from './util.js';

const here = dirname(fileURLToPath(import.meta.url));
export const projectRoot = resolve(here, '..', '..');

/** nodetruth listens on 127.0.0.1:7070 in the guest; socat relays 10.0.2.15:7071 to it. */
const GUEST_RELAY_PORT = 7071;
/** The DaemonSet's agent listens on the node's address itself (--listen=$(POD_IP):7070). */
const GUEST_NODE_PORT = 7070;
/**
 * Where the guest reaches the FAKE API server on the host: slirp's guestfwd connects this
 * one guest address and port (and nothing else) to a command run per connection, socat to
 * the fake's loopback port. restrict=on still blocks every other connection to the host.
 */
export const GUEST_API_ADDR = '10.0.2.100';
export const GUEST_API_PORT = 443;

export interface ExecResult {
  rc: number;
  out: string;
  ms: number;
}

class QemuUnavailable extends Error {}

/** The qemu binary; NODETRUTH_E2E_QEMU overrides it (e.g. to check the "no qemu" path). */
const QEMU = process.env.NODETRUTH_E2E_QEMU ?? 'qemu-system-x86_64';

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

function checkQemu(): void {
  try {
    execFileSync(QEMU, ['--version'], { stdio: 'pipe', timeout: 10_000 });
    execFileSync('qemu-img', ['--version'], { stdio: 'pipe', timeout: 10_000 });
  } catch (err) {
    throw new QemuUnavailable(
      `qemu cannot run on this machine (${err instanceof Error ? err.message.split('\n')[0] : String(err)}). ` +
        'The e2e tests need qemu-system-x86 and qemu-utils (test/e2e/APT_PACKAGES); they did NOT run.',
    );
  }
}

export class NodeVm {
  readonly runDir: string;
  readonly shareDir: string;
  readonly serialLog: string;
  readonly agentLog: string;
  readonly controlLog: string;
  readonly pidFile: string;
  hostPort = 0;
  /** host port forwarded to the guest's 10.0.2.15:7070 (the DaemonSet's agent) */
  nodePort = 0;
  /** set before boot(): the FAKE API server's loopback port the guest's API address leads to */
  apiServerPort = 0;
  /**
   * Set before boot(), optional: host files given to the guest as read-only raw virtio
   * disks, in order /dev/vdb, /dev/vdc, … (the root disk is /dev/vda). A tar file is
   * readable as such a device: the agent image's archive reaches containerd this way many
   * times faster than through 9p.
   */
  readonlyDrives: string[] = [];
  /**
   * Set before boot(), optional: qemu's cache mode for the overlay disk. Unset, qemu's
   * default (writeback, the guest's flushes honoured). `unsafe` ignores the guest's
   * flushes: containerd fsyncs every blob and snapshot it writes, and the overlay is
   * deleted after the run anyway.
   */
  overlayCache: string | undefined;
  /**
   * Set before boot(), optional: more host loopback ports forwarded to the same port on the
   * guest's 10.0.2.15 (the dev cluster's kubelet, which the API server dials on the port
   * the node reports).
   */
  hostForwards: number[] = [];
  /**
   * Set before boot(), optional: more words for the guest kernel's command line (e.g.
   * systemd.mask=… for a node that runs without a unit the image has).
   */
  kernelArgs: string[] = [];
  private pid: number | undefined;
  private seq = 0;
  /** set when a command outlived its timeout: the guest stopped answering, send no more */
  private stuck: string | undefined;
  bootMs = 0;

  /**
   * runDir: where the overlay, logs and share live; by default a new directory under the
   * cache's runs/, whose qemu a later run stops once this process is gone. A VM meant to
   * outlive this process (the dev cluster's node) passes a directory of its own.
   */
  constructor(readonly image: GuestImage, runDir?: string) {
    const stamp = new Date().toISOString().replace(/[:.]/g, '').slice(0, 15);
    this.runDir = runDir ?? join(cacheRoot(), 'runs', `run-${stamp}-${process.pid}`);
    this.shareDir = join(this.runDir, 'share');
    this.serialLog = join(this.runDir, 'serial.log');
    this.agentLog = join(this.shareDir, 'agent.log');
    this.controlLog = join(this.shareDir, 'control.log');
    this.pidFile = join(this.runDir, 'qemu.pid');
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.hostPort}`;
  }

  /** Where to look when something went wrong. */
  where(): string {
    return [
      `  serial log:  ${this.serialLog}`,
      `  agent log:   ${this.agentLog}`,
      `  control log: ${this.controlLog}`,
      `  commands:    ${join(this.shareDir, 'cmd')}`,
    ].join('\n');
  }

  /**
   * Boots the guest and waits until it is ready. A kernel that panics during boot under TCG
   * (seen on sid's 7.2 kernel, about one boot in three on a loaded machine: `RIP:
   * sched_clock_tick`, "Fatal exception in interrupt", within seconds) is booted once more
   * on a fresh overlay; any other failure, or a second panic, is the run's.
   */
  async boot(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.bootOnce();
        return;
      } catch (err) {
        if (attempt >= 2 || !this.panicked()) throw err;
        log(`the guest's kernel panicked while booting; booting it once more (its serial log kept as serial.log.panic-${attempt})`);
        renameSync(this.serialLog, `${this.serialLog}.panic-${attempt}`);
        rmSync(join(this.runDir, 'overlay.qcow2'), { force: true });
        rmSync(join(this.shareDir, 'stage'), { force: true });
        this.pid = undefined;
      }
    }
  }

  /**
   * The guest's kernel panicked and its qemu is gone. Seen under TCG on sid's 7.2 kernel at
   * boot and, once, two minutes after it: an `Oops: int3` inside the scheduler's tick right
   * as containerd wrote a pod's cpu.max (the kernel patching its own code for the CFS
   * bandwidth key, which multi-threaded TCG can miss): the emulator's, not the run's.
   */
  panicked(): boolean {
    const gone = this.pid === undefined || !pidIsOurQemu(this.pid, this.runDir);
    return gone && existsSync(this.serialLog) && /Kernel panic/.test(readFileSync(this.serialLog, 'latin1'));
  }

  private async bootOnce(): Promise<void> {
    checkQemu();
    pruneRuns();
    mkdirSync(join(this.shareDir, 'cmd'), { recursive: true });
    const overlay = join(this.runDir, 'overlay.qcow2');
    await runOk('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', this.image.rootfs, overlay], { timeoutMs: 30_000 });
    this.hostPort = await freePort();
    this.nodePort = await freePort();
    const guestfwd = this.apiServerPort ? `,guestfwd=tcp:${GUEST_API_ADDR}:${GUEST_API_PORT}-cmd:socat - TCP:127.0.0.1:${this.apiServerPort}` : '';
    const started = Date.now();
    const args = [
      '-name', `nodetruth-e2e-${this.image.suite}`,
      '-accel', 'tcg,thread=multi',
      '-cpu', 'max',
      '-smp', '2',
      '-m', '2048',
      '-kernel', this.image.kernel,
      '-initrd', this.image.initrd,
      // sysrq_always_enabled: a stuck guest can be asked for its blocked tasks (stuckDump).
      // damon_stat.enabled=N: sid's kernel (7.2) samples memory access with DAMON by default,
      // and under TCG its kdamond took 15-40 % of the guest's CPU once pods used memory
      // (measured with top in the cluster's sid node), starving kubelet and the agent.
      // Kernels without it (bookworm's 6.1) ignore the parameter.
      '-append', ['console=ttyS0 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 psi=1 panic=-1 net.ifnames=0 sysrq_always_enabled damon_stat.enabled=N', ...this.kernelArgs].join(' '),
      '-drive', `file=${overlay},if=virtio,format=qcow2${this.overlayCache ? `,cache=${this.overlayCache}` : ''}`,
      ...this.readonlyDrives.flatMap((f) => ['-drive', `file=${f},format=raw,if=virtio,readonly=on`]),
      '-netdev', `user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${this.hostPort}-:${GUEST_RELAY_PORT},hostfwd=tcp:127.0.0.1:${this.nodePort}-:${GUEST_NODE_PORT}${this.hostForwards.map((p) => `,hostfwd=tcp:127.0.0.1:${p}-:${p}`).join('')}${guestfwd}`,
      '-device', 'virtio-net-pci,netdev=net0',
      '-virtfs', `local,path=${projectRoot},mount_tag=project,security_model=none,readonly=on,id=project`,
      '-virtfs', `local,path=${this.shareDir},mount_tag=share,security_model=none,id=share`,
      '-nodefaults',
      '-display', 'none',
      '-serial', `file:${this.serialLog}`,
      // for a person looking at a stuck guest: socat - UNIX-CONNECT:<run dir>/monitor.sock
      '-monitor', `unix:${join(this.runDir, 'monitor.sock')},server=on,wait=off`,
      '-no-reboot',
      '-daemonize',
      '-pidfile', this.pidFile,
    ];
    writeFileSync(join(this.runDir, 'qemu.args.json'), JSON.stringify(args, null, 1));
    // With -daemonize the command returns once the VM runs; its pidfile names the VM process.
    await runOk(QEMU, args, { timeoutMs: 60_000 });
    this.pid = Number(readFileSync(this.pidFile, 'utf8').trim());
    if (!Number.isInteger(this.pid) || this.pid <= 0) throw new Error(`bad qemu pidfile ${this.pidFile}`);
    log(`qemu pid ${this.pid}, host port ${this.hostPort}, run dir ${this.runDir}`);

    await waitFor('the guest to be ready (containerd up, images imported)', 900_000, () => {
      this.assertAlive();
      const stage = readStage(this.shareDir);
      if (stage === 'ready') return true;
      if (stage === 'containerd-timeout' || stage === 'images-failed') throw new GiveUp(`guest boot failed at stage ${stage}; control log tail:\n${tailFile(this.controlLog, 20)}`);
      return undefined;
    }, 500);
    this.bootMs = Date.now() - started;
    log(`guest ready in ${(this.bootMs / 1000).toFixed(1)} s`);
  }

  assertAlive(): void {
    if (this.pid === undefined || !pidIsOurQemu(this.pid, this.runDir)) {
      throw new GiveUp(`qemu (pid ${this.pid}) is not running any more; serial log tail:\n${tailFile(this.serialLog, 30)}`);
    }
  }

  /**
   * Runs a shell script in the guest (as root, under `timeout`), through the share.
   * Resolves with its exit status and combined output; throws only when the guest does
   * not answer at all.
   */
  async exec(script: string, timeoutSec = 60): Promise<ExecResult> {
    if (this.stuck) throw new GiveUp(`not sending more commands: ${this.stuck}`);
    const id = `${String(++this.seq).padStart(4, '0')}`;
    const cmdDir = join(this.shareDir, 'cmd');
    const started = Date.now();
    writeFileSync(join(cmdDir, `${id}.tmp`), script);
    renameSync(join(cmdDir, `${id}.tmp`), join(cmdDir, `${id}.${timeoutSec}.sh`));
    const rcFile = join(cmdDir, `${id}.rc`);
    const what = `guest command ${id} (${script.split('\n')[0]?.slice(0, 60)})`;
    const rc = await waitFor(what, (timeoutSec + 20) * 1000, () => {
      this.assertAlive();
      return existsSync(rcFile) ? Number(readFileSync(rcFile, 'utf8').trim()) : undefined;
    }, 100).catch(async (err: unknown) => {
      if (err instanceof GiveUp) throw err;
      // The guest's own `timeout` should have ended it 20 s ago: the guest is stuck.
      this.stuck = `${what} got no answer within ${timeoutSec + 20} s`;
      await this.stuckDump();
      throw new GiveUp(`${this.stuck}; the guest's blocked tasks and CPU backtraces were requested into ${this.serialLog}`);
    });
    const outFile = join(cmdDir, `${id}.out`);
    const out = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
    return { rc, out, ms: Date.now() - started };
  }

  /** exec() that throws on a non-zero exit status. */
  async sh(script: string, timeoutSec = 60): Promise<string> {
    const r = await this.exec(script, timeoutSec);
    if (r.rc !== 0) throw new Error(`guest command exited ${r.rc}: ${script.split('\n')[0]}\n${r.out.split('\n').slice(-30).join('\n')}`);
    return r.out;
  }

  /**
   * Asks a stuck guest, through the qemu monitor, for SysRq-w (blocked tasks) and SysRq-l
   * (backtraces of all CPUs) on its console, and records the monitor's view of the vCPUs.
   */
  async stuckDump(): Promise<void> {
    const sock = join(this.runDir, 'monitor.sock');
    const out = join(this.runDir, 'monitor.txt');
    const commands = ['info status', 'info cpus', 'sendkey alt-sysrq-w', 'sendkey alt-sysrq-l'];
    try {
      const text = await new Promise<string>((res, rej) => {
        let got = '';
        const c = createConnection(sock);
        const timer = setTimeout(() => c.destroy(), 5000);
        c.setEncoding('utf8');
        c.on('data', (d: string) => (got += d));
        c.on('connect', () => c.write(commands.join('\n') + '\n'));
        c.on('error', (e) => {
          clearTimeout(timer);
          rej(e);
        });
        c.on('close', () => {
          clearTimeout(timer);
          res(got);
        });
      });
      writeFileSync(out, text);
      await sleep(3000);
      log(`stuck guest: monitor output in ${out}, SysRq dumps at the end of ${this.serialLog}`);
    } catch (err) {
      log(`could not reach the qemu monitor: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Stops qemu by the PID from its pidfile: SIGTERM, then SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const pid = this.pid;
    this.pid = undefined;
    if (pid === undefined || !pidIsOurQemu(pid, this.runDir)) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && pidIsOurQemu(pid, this.runDir)) await sleep(100);
    if (pidIsOurQemu(pid, this.runDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(join(this.runDir, 'overlay.qcow2'), { force: true });
    rmSync(join(this.shareDir, 'agent-image.oci.tar'), { force: true });
    log(`qemu pid ${pid} stopped`);
  }

  /** Synchronous last resort for process exit handlers. */
  killNow(): void {
    const pid = this.pid;
    if (pid !== undefined && pidIsOurQemu(pid, this.runDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    this.pid = undefined;
  }
}

function readStage(shareDir: string): string | undefined {
  try {
    return readFileSync(join(shareDir, 'stage'), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** True when `pid` is alive and is the qemu we started (its command line names our run dir). */
function pidIsOurQemu(pid: number, runDir: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && cmdline.includes('qemu-system') && cmdline.includes(runDir);
  } catch {
    return false;
  }
}

/**
 * Stops the qemu of an earlier run whose test process died without cleaning up (SIGKILL),
 * by the PID in that run's pidfile; keeps the 5 newest run directories (their logs).
 */
function pruneRuns(): void {
  const dir = join(cacheRoot(), 'runs');
  if (!existsSync(dir)) return;
  const runs = readdirSync(dir)
    .filter((n) => n.startsWith('run-'))
    .map((n) => ({ name: n, p: join(dir, n), t: statSync(join(dir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  runs.forEach((r, i) => {
    const pidFile = join(r.p, 'qemu.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    const alive = pid > 0 && pidIsOurQemu(pid, r.p);
    const owner = Number(/-(\d+)$/.exec(r.name)?.[1] ?? 0);
    if (alive && owner > 0 && !processExists(owner)) {
      log(`stopping the orphaned qemu ${pid} of ${r.p} (its test process ${owner} is gone)`);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      return;
    }
    if (i >= 5 && !alive) rmSync(r.p, { recursive: true, force: true });
  });
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
