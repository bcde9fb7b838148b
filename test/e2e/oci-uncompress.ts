// The agent image's archive made ready for the guest: the same image with uncompressed
// layers (see below). Kept apart from oci.ts, whose text is part of the guest images' hash.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

const sha256 = (buf: Buffer): string => 'sha256:' + createHash('sha256').update(buf).digest('hex');

/**
 * Rewrites an OCI archive (one image, gzip layers, as `buildah push oci-archive:` writes it)
 * with uncompressed layers: the same image (the config's diff_ids are the uncompressed
 * digests already), but the guest's containerd only copies and untars it, where under TCG
 * gunzip of ~115 MB took minutes. The index entry carries `io.containerd.image.name`.
 */
export function uncompressOciArchive(inTar: string, outTar: string, name: string): void {
  const work = mkdtempSync(join(tmpdir(), 'nodetruth-oci-'));
  try {
    const src = join(work, 'in');
    mkdirSync(src);
    execFileSync('tar', ['-xf', inTar, '-C', src]);
    const blob = (digest: string) => join(src, 'blobs', 'sha256', digest.slice('sha256:'.length));
    const index = JSON.parse(readFileSync(join(src, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    const put = (buf: Buffer): string => {
      const digest = sha256(buf);
      writeFileSync(join(blobs, digest.slice('sha256:'.length)), buf);
      return digest;
    };
    const manifests: Descriptor[] = [];
    for (const entry of index.manifests) {
      const m = JSON.parse(readFileSync(blob(entry.digest), 'utf8')) as { config: Descriptor; layers: Descriptor[] } & Record<string, unknown>;
      put(readFileSync(blob(m.config.digest)));
      const layers = m.layers.map((l) => {
        const raw = readFileSync(blob(l.digest));
        const plain = l.mediaType.endsWith('+gzip') ? gunzipSync(raw) : raw;
        return { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: put(plain), size: plain.length };
      });
      const manifest = Buffer.from(JSON.stringify({ ...m, layers }));
      manifests.push({ mediaType: entry.mediaType, digest: put(manifest), size: manifest.length, annotations: { ...(entry.annotations ?? {}), 'io.containerd.image.name': name } });
    }
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }));
    execFileSync('tar', ['--create', '--file', outTar, '--owner=0', '--group=0', '--numeric-owner', '--sort=name', '-C', layout, '.']);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
