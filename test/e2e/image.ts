// Builds (once) and caches the node guest: a Debian bookworm root made by mmdebstrap,
// turned into an ext4 image with `mkfs.ext4 -d` (no loop mounts), plus the kernel and
// initrd copied out of its /boot. The cache key is a hash of every build input, so a
// change to the package list, the mirror, the customize hook or this file rebuilds it.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBusyboxOciArchive, type OciImageSpec } from './oci.js';
import { cacheHome, log, runOk } from './util.js';

const here = dirname(fileURLToPath(import.meta.url));

export const GUEST_PACKAGES = [
  'systemd', 'systemd-sysv', 'dbus', 'udev', 'kmod', 'containerd', 'runc', 'busybox-static',
  'iproute2', 'procps', 'linux-image-amd64', 'initramfs-tools', 'util-linux', 'socat',
  // CNI plugins (bridge, host-local, loopback in /usr/lib/cni) for the dev cluster's kubelet
  'containernetworking-plugins',
  // the node failures (guest/faults.sh): nft makes the kernel track connections, openssl
  // makes an expired kubelet certificate, mkfs.ext4 the loop file systems (sid's minbase
  // has no e2fsprogs)
  'nftables', 'openssl', 'e2fsprogs',
];

/** Images imported into containerd's k8s.io namespace at boot (see guest/control.sh). */
export const GUEST_IMAGES: OciImageSpec[] = [
  { name: 'localhost/e2e/busybox:1', cmd: ['sh'] },
  // pause-like: what containerd runs as the sandbox (config.toml sandbox_image)
  { name: 'localhost/e2e/pause:1', entrypoint: ['/bin/sleep', '2147483647'] },
];

/** Path inside the guest where the OCI archive is stored. */
export const GUEST_IMAGES_TAR = '/var/lib/nodetruth-e2e/images.tar';

const IMAGE_SIZE = '3G';

/**
 * The guests: today's node (bookworm: containerd 1.6, runc 1.1, systemd 252) and a current
 * one from Debian's newest suite (sid: containerd 2.x, runc 1.3, systemd 26x).
 */
export type Suite = 'bookworm' | 'sid';
export const SUITES: Suite[] = ['bookworm', 'sid'];

function mirrorLines(suite: Suite): string[] {
  const base = process.env.NODETRUTH_E2E_MIRROR ?? 'http://deb.debian.org/debian';
  const security = process.env.NODETRUTH_E2E_SECURITY_MIRROR ?? 'http://deb.debian.org/debian-security';
  if (suite === 'sid') return [`deb ${base} sid main`];
  return [`deb ${base} bookworm main`, `deb ${base} bookworm-updates main`, `deb ${security} bookworm-security main`];
}

export interface GuestImage {
  dir: string;
  rootfs: string;
  kernel: string;
  initrd: string;
  hash: string;
  suite: Suite;
  /** true when this call built it, false when it came from the cache */
  built: boolean;
  buildMs?: number;
}

export function cacheRoot(): string {
  return process.env.NODETRUTH_E2E_CACHE ?? cacheHome('e2e');
}

export function imageHash(suite: Suite): string {
  const h = createHash('sha256');
  h.update(`recipe-v2 ${suite}\n`);
  h.update(GUEST_PACKAGES.join(',') + '\n');
  h.update(mirrorLines(suite).join('\n') + '\n');
  h.update(JSON.stringify(GUEST_IMAGES) + '\n' + IMAGE_SIZE + '\n');
  for (const f of ['guest/customize.sh', 'image.ts', 'oci.ts']) h.update(readFileSync(join(here, f)));
  return h.digest('hex').slice(0, 16);
}

function pick(dir: string, prefix: string): string {
  const found = readdirSync(dir).filter((f) => f.startsWith(prefix)).sort();
  const last = found.at(-1);
  if (!last) throw new Error(`no ${prefix}* in ${dir}: did linux-image-amd64 install?`);
  return join(dir, last);
}

export async function ensureImage(suite: Suite = 'bookworm'): Promise<GuestImage> {
  const root = cacheRoot();
  const hash = imageHash(suite);
  const dir = join(root, `image-${suite}-${hash}`);
  const done = { dir, rootfs: join(dir, 'rootfs.img'), kernel: join(dir, 'vmlinuz'), initrd: join(dir, 'initrd.img'), hash, suite };
  if (existsSync(join(dir, 'ok'))) {
    log(`guest image cached: ${dir}`);
    return { ...done, built: false };
  }

  for (const tool of ['mmdebstrap', 'mkfs.ext4']) {
    const found = (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin']).some((d) => d && existsSync(join(d, tool)));
    if (!found) throw new Error(`${tool} is not installed: the guest image cannot be built (host packages: test/e2e/APT_PACKAGES); the e2e tests did NOT run`);
  }
  const started = Date.now();
  mkdirSync(root, { recursive: true });
  const work = join(root, `build-${suite}-${hash}-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const rootDir = join(work, 'root');
  const buildLog = join(work, 'build.log');
  log(`building guest image ${suite} ${hash} in ${work} (log: ${buildLog}); this takes a few minutes`);
  try {
    await runOk(
      'mmdebstrap',
      [
        '--variant=minbase',
        `--include=${GUEST_PACKAGES.join(',')}`,
        '--dpkgopt=path-exclude=/usr/share/man/*',
        '--dpkgopt=path-exclude=/usr/share/doc/*',
        '--dpkgopt=path-exclude=/usr/share/locale/*',
        '--dpkgopt=path-include=/usr/share/doc/*/copyright',
        // sid's Release file is signed valid for a week only, and the mirror this machine
        // reaches may be a snapshot older than that: apt refuses it as expired otherwise
        ...(suite === 'sid' ? ['--aptopt=Acquire::Check-Valid-Until "false"'] : []),
        `--customize-hook=sh ${join(here, 'guest', 'customize.sh')} "$1" ${work}`,
        suite,
        rootDir,
        ...mirrorLines(suite),
      ],
      { timeoutMs: 20 * 60_000, logFile: buildLog },
    );
    const debootstrapMs = Date.now() - started;

    const boot = join(rootDir, 'boot');
    copyFileSync(pick(boot, 'vmlinuz-'), join(work, 'vmlinuz'));
    copyFileSync(pick(boot, 'initrd.img-'), join(work, 'initrd.img'));

    const tarPath = join(rootDir, GUEST_IMAGES_TAR);
    mkdirSync(dirname(tarPath), { recursive: true });
    buildBusyboxOciArchive(join(rootDir, 'bin', 'busybox'), tarPath, GUEST_IMAGES);

    await runOk('mkfs.ext4', ['-q', '-F', '-L', 'nodetruth-node', '-d', rootDir, join(work, 'rootfs.img'), IMAGE_SIZE], {
      timeoutMs: 5 * 60_000,
      logFile: buildLog,
      env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` },
    });
    rmSync(rootDir, { recursive: true, force: true });
    const buildMs = Date.now() - started;
    writeFileSync(join(work, 'image.json'), JSON.stringify({ hash, suite, packages: GUEST_PACKAGES, mirrors: mirrorLines(suite), debootstrapMs, buildMs, builtAt: new Date().toISOString() }, null, 2));
    writeFileSync(join(work, 'ok'), '');
    try {
      renameSync(work, dir);
    } catch {
      // another run finished the same image first: use theirs
      rmSync(work, { recursive: true, force: true });
    }
    pruneOldImages(root, suite, hash);
    log(`guest image built in ${(buildMs / 1000).toFixed(1)} s (mmdebstrap ${(debootstrapMs / 1000).toFixed(1)} s): ${dir}`);
    return { ...done, built: true, buildMs };
  } catch (err) {
    log(`guest image build failed; build log: ${buildLog}`);
    rmSync(rootDir, { recursive: true, force: true });
    throw err;
  }
}

/** Removes images of other hashes and stale build directories (older than an hour). */
function pruneOldImages(root: string, suite: Suite, keep: string): void {
  for (const name of readdirSync(root)) {
    const p = join(root, name);
    const other = !SUITES.some((s) => s !== suite && name.startsWith(`image-${s}-`));
    if (name.startsWith('image-') && other && name !== `image-${suite}-${keep}`) rmSync(p, { recursive: true, force: true });
    if (name.startsWith('build-') && Date.now() - statSync(p).mtimeMs > 3_600_000) rmSync(p, { recursive: true, force: true });
  }
}

// `node --import tsx test/e2e/image.ts [bookworm|sid]` builds the image on its own.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureImage((process.argv[2] as Suite | undefined) ?? 'bookworm').then(
    (img) => console.log(JSON.stringify(img, null, 2)),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
