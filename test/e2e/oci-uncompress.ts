// The agent image's archive made ready for the guest: the same image with uncompressed
// layers, on a disk of its own (see below). Kept apart from oci.ts, whose text is part of the guest images' hash.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
 * Lays out an OCI archive (one image, gzip layers, as `buildah push oci-archive:` writes it;
 * or uncompressed ones) in `layout` with uncompressed layers: the same image (the config's
 * diff_ids are the uncompressed digests already), but the guest's containerd only copies
 * and untars it, where under TCG gunzip of ~115 MB took minutes. The index entry carries
 * `io.containerd.image.name`. Returns the digests of the layers and of the other blobs.
 */
function uncompressedLayout(inTar: string, work: string, layout: string, name: string): { layers: string[]; others: string[] } {
  const src = join(work, 'in');
  mkdirSync(src);
  execFileSync('tar', ['-xf', inTar, '-C', src]);
  const blob = (digest: string) => join(src, 'blobs', 'sha256', digest.slice('sha256:'.length));
  const index = JSON.parse(readFileSync(join(src, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (buf: Buffer): string => {
    const digest = sha256(buf);
    writeFileSync(join(blobs, digest.slice('sha256:'.length)), buf);
    return digest;
  };
  const manifests: Descriptor[] = [];
  const layerDigests: string[] = [];
  const others: string[] = [];
  for (const entry of index.manifests) {
    const m = JSON.parse(readFileSync(blob(entry.digest), 'utf8')) as { config: Descriptor; layers: Descriptor[] } & Record<string, unknown>;
    others.push(put(readFileSync(blob(m.config.digest))));
    const layers = m.layers.map((l) => {
      const raw = readFileSync(blob(l.digest));
      const plain = l.mediaType.endsWith('+gzip') ? gunzipSync(raw) : raw;
      const digest = put(plain);
      layerDigests.push(digest);
      return { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest, size: plain.length };
    });
    const manifest = Buffer.from(JSON.stringify({ ...m, layers }));
    const digest = put(manifest);
    others.push(digest);
    manifests.push({ mediaType: entry.mediaType, digest, size: manifest.length, annotations: { ...(entry.annotations ?? {}), 'io.containerd.image.name': name } });
  }
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }));
  return { layers: layerDigests, others };
}

const tarArgs = ['--owner=0', '--group=0', '--numeric-owner', '--sort=name'];

/**
 * The image for the guest as an ext4 disk image (made with `mkfs.ext4 -d`, no mounts):
 * `blobs/sha256/*` (the layout with uncompressed layers) and `import.tar`, the same image
 * without its layers (index, manifest, config: a few KB). guest/control.sh mounts it
 * read-only, links the blobs into containerd's content store, registers them (containerd's
 * shared content policy links an existing blob without reading it) and imports
 * `import.tar`: only the unpack reads the layers. Streaming them into containerd (`ctr
 * images import` of the whole archive) took ~400 s of a TCG guest for 344 MB.
 */
export function agentImageDisk(inTar: string, outImg: string, name: string): void {
  const work = mkdtempSync(join(tmpdir(), 'nodetruth-oci-'));
  try {
    const fs = join(work, 'fs');
    const { others } = uncompressedLayout(inTar, work, fs, name);
    execFileSync('tar', ['--create', '--file', join(fs, 'import.tar'), ...tarArgs, '-C', fs, 'index.json', 'oci-layout', ...others.map((d) => `blobs/sha256/${d.slice('sha256:'.length)}`)]);
    let bytes = 0;
    for (const f of readdirSync(join(fs, 'blobs', 'sha256'))) bytes += statSync(join(fs, 'blobs', 'sha256', f)).size;
    const mb = Math.ceil((bytes * 1.1) / 2 ** 20) + 32; // ext4's metadata and journal
    execFileSync('mkfs.ext4', ['-q', '-F', '-L', 'agent-image', '-d', fs, outImg, `${mb}M`], { env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` } });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
