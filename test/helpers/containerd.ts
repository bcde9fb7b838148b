/**
 * A real containerd (Debian's package) for integration tests, with everything
 * under a temp dir: its own config, root, state, sockets and empty CNI dirs.
 * Tests make only read-only CRI calls against it (DEVELOPERS.md): it never
 * runs a sandbox or container on this machine.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CriClient } from '../../src/readers/cri/client.js';
import { buildBusyboxOciArchive } from '../e2e/oci.js';

const run = promisify(execFile);

export const TEST_IMAGE = 'localhost/nodetruth/busybox:test';

export function containerdMissing(): string | null {
  for (const bin of ['/usr/bin/containerd', '/usr/bin/ctr', '/bin/busybox']) {
    if (!existsSync(bin)) return `${bin} is not installed (apt-get install containerd busybox-static)`;
  }
  if (process.getuid?.() !== 0) return 'containerd needs root';
  return null;
}

export class TestContainerd {
  readonly dir: string;
  readonly socket: string;
  readonly endpoint: string;
  readonly logPath: string;
  private child: ChildProcess | null = null;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'nodetruth-containerd-'));
    this.socket = join(this.dir, 'containerd.sock');
    this.endpoint = `unix://${this.socket}`;
    this.logPath = join(this.dir, 'containerd.log');
    for (const d of ['root', 'state', 'tmp', 'cni/bin', 'cni/net.d']) mkdirSync(join(this.dir, d), { recursive: true });
    writeFileSync(
      join(this.dir, 'config.toml'),
      [
        'version = 2',
        `root = "${this.dir}/root"`,
        `state = "${this.dir}/state"`,
        `temp = "${this.dir}/tmp"`,
        '[grpc]',
        `  address = "${this.socket}"`,
        '[ttrpc]',
        `  address = "${this.socket}.ttrpc"`,
        '[debug]',
        `  address = "${this.dir}/debug.sock"`,
        '[plugins."io.containerd.grpc.v1.cri"]',
        `  sandbox_image = "${TEST_IMAGE}"`,
        // Snapshot usage (ImageFsInfo) is sampled on this period; the default 10 s would make tests wait.
        '  stats_collect_period = 1',
        '  [plugins."io.containerd.grpc.v1.cri".cni]',
        `    bin_dir = "${this.dir}/cni/bin"`,
        `    conf_dir = "${this.dir}/cni/net.d"`,
        '',
      ].join('\n'),
    );
  }

  get pid(): number {
    if (!this.child?.pid) throw new Error('containerd is not running');
    return this.child.pid;
  }

  /** Start containerd and wait until the CRI answers Version. */
  async start(): Promise<void> {
    const out = openSync(this.logPath, 'a');
    this.child = spawn('/usr/bin/containerd', ['--config', join(this.dir, 'config.toml')], { stdio: ['ignore', out, out] });
    const cri = new CriClient(this.endpoint, 1000);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await cri.version();
          return;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`containerd did not come up in 30 s (log: ${this.logPath}): ${(err as Error).message}`);
          if (this.child.exitCode !== null) throw new Error(`containerd exited with ${this.child.exitCode} (log: ${this.logPath})`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      cri.close();
    }
  }

  /** Build a busybox-static OCI tarball and import it the way `ctr images import` does on a node. */
  async importTestImage(): Promise<void> {
    const tar = join(this.dir, 'busybox-oci.tar');
    buildBusyboxOciArchive('/bin/busybox', tar, [{ name: TEST_IMAGE, cmd: ['sh'] }]);
    await run('/usr/bin/ctr', ['--address', this.socket, '-n', 'k8s.io', 'images', 'import', tar], { timeout: 30_000 });
  }

  /**
   * SIGSTOP, then wait until every thread of containerd has stopped: kill(2) only makes the stop
   * pending, and a thread running on another CPU goes on until it is interrupted (on a loaded
   * 2-CPU VM it answered a CRI call sent right after the kill).
   */
  async freeze(): Promise<void> {
    process.kill(this.pid, 'SIGSTOP');
    const deadline = Date.now() + 5000;
    for (;;) {
      const tasks = readdirSync(`/proc/${this.pid}/task`);
      const running = tasks.filter((tid) => {
        const stat = readFileSync(`/proc/${this.pid}/task/${tid}/stat`, 'utf8');
        return !/^[Tt]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
      });
      if (running.length === 0) return;
      if (Date.now() > deadline) throw new Error(`containerd ${this.pid}: ${running.length} of ${tasks.length} threads not stopped 5 s after SIGSTOP`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  thaw(): void {
    process.kill(this.pid, 'SIGCONT');
  }

  /** Stop containerd (SIGTERM, then SIGKILL) and wait until it is reaped. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid!, 'SIGCONT');
    process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  async destroy(): Promise<void> {
    await this.stop();
    // containerd leaves overlay mounts only for running containers, which these tests never create.
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
