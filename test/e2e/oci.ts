// Builds an OCI image layout tarball from a static busybox binary, for
// `ctr -n k8s.io images import` inside the node guest (containerd 1.6 takes a
// hand-made OCI layout with the `io.containerd.image.name` annotation, in ~0.1 s).
//
// One layer (busybox + applet symlinks + the usual empty directories), shared by several
// image configs: an ordinary busybox image for the workloads and a pause-like image for
// the pod sandboxes.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface OciImageSpec {
  /** full reference, e.g. localhost/e2e/busybox:1 */
  name: string;
  entrypoint?: string[];
  cmd?: string[];
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string };
}

const sha256 = (buf: Buffer): string => 'sha256:' + createHash('sha256').update(buf).digest('hex');

/** Writes `outTar`, an OCI image layout tarball holding every image in `images`. */
export function buildBusyboxOciArchive(busyboxPath: string, outTar: string, images: OciImageSpec[]): void {
  const work = mkdtempSync(join(tmpdir(), 'nodetruth-oci-'));
  try {
    // --- the layer -------------------------------------------------------------------
    const rootfs = join(work, 'rootfs');
    for (const d of ['bin', 'dev', 'etc', 'proc', 'sys', 'tmp', 'var', 'root', 'run']) mkdirSync(join(rootfs, d), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    copyFileSync(busyboxPath, join(rootfs, 'bin', 'busybox'));
    chmodSync(join(rootfs, 'bin', 'busybox'), 0o755);
    const applets = execFileSync(busyboxPath, ['--list'], { encoding: 'utf8' })
      .split('\n')
      .map((s) => s.trim())
      .filter((s) => /^[a-z0-9_.[-]+$/.test(s) && s !== 'busybox');
    for (const a of applets) symlinkSync('busybox', join(rootfs, 'bin', a));
    writeFileSync(join(rootfs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
    writeFileSync(join(rootfs, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
    const layerTar = join(work, 'layer.tar');
    execFileSync('tar', ['--create', '--file', layerTar, '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--sort=name', '-C', rootfs, '.']);
    const layer = readFileSync(layerTar);
    const layerDigest = sha256(layer);

    // --- blobs -----------------------------------------------------------------------
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    const putBlob = (buf: Buffer): string => {
      const digest = sha256(buf);
      writeFileSync(join(blobs, digest.slice('sha256:'.length)), buf);
      return digest;
    };
    putBlob(layer);

    const manifests: Descriptor[] = [];
    for (const img of images) {
      const config = Buffer.from(
        JSON.stringify({
          created: '1970-01-01T00:00:00Z',
          architecture: 'amd64',
          os: 'linux',
          config: {
            Env: ['PATH=/bin'],
            WorkingDir: '/',
            ...(img.entrypoint ? { Entrypoint: img.entrypoint } : {}),
            ...(img.cmd ? { Cmd: img.cmd } : {}),
          },
          rootfs: { type: 'layers', diff_ids: [layerDigest] },
          history: [{ created: '1970-01-01T00:00:00Z', created_by: 'nodetruth test/e2e/oci.ts: busybox-static' }],
        }),
      );
      const configDigest = putBlob(config);
      const manifest = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
          layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length }],
        }),
      );
      const manifestDigest = putBlob(manifest);
      const tag = img.name.slice(img.name.lastIndexOf(':') + 1);
      manifests.push({
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: manifestDigest,
        size: manifest.length,
        annotations: { 'io.containerd.image.name': img.name, 'org.opencontainers.image.ref.name': tag },
        platform: { architecture: 'amd64', os: 'linux' },
      });
    }
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }));
    execFileSync('tar', ['--create', '--file', outTar, '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--sort=name', '-C', layout, '.']);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
