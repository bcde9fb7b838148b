// The agent image's OCI archive, built by scripts/build-image.sh from the Dockerfile (cached by
// its inputs: a hit answers at once). Shared by the dev cluster (cluster/node.ts) and prepare.ts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runOk } from './util.js';
import { projectRoot } from './vm.js';

/** The tag the agent image is built and loaded into the node's containerd under (deploy/ names it). */
export const AGENT_IMAGE = 'ghcr.io/nodetruth/nodetruth:0.1.0';

// The dev cluster imports the amd64 image alone, so it asks for that architecture only (the
// script's default, both and the multi-arch archive, is test/e2e/arm64.ts's and README's).
export async function agentImageArchive(): Promise<{ archive: string; ms: number }> {
  const started = Date.now();
  const env = { ...process.env, NODETRUTH_IMAGE_ARCHES: 'amd64' };
  const r = await runOk('bash', [join(projectRoot, 'scripts', 'build-image.sh')], { cwd: projectRoot, env, timeoutMs: 30 * 60_000 });
  const archive = r.stdout.trim().split('\n').at(-1) ?? '';
  assert.ok(existsSync(archive), `scripts/build-image.sh named no archive: ${r.stdout.slice(-400)}`);
  return { archive, ms: Date.now() - started };
}

/**
 * README's command, as written (no NODETRUTH_IMAGE_ARCHES): the image for linux/amd64 and
 * linux/arm64, and the multi-arch archive of both. The arm64 build runs its arm64 steps
 * under qemu-user (cold: see README, "Timings").
 */
export async function allArchArchives(): Promise<{ amd64: string; arm64: string; multiarch: string; ms: number }> {
  const started = Date.now();
  const env = { ...process.env };
  delete env.NODETRUTH_IMAGE_ARCHES;
  const r = await runOk('bash', [join(projectRoot, 'scripts', 'build-image.sh')], { cwd: projectRoot, env, timeoutMs: 60 * 60_000 });
  const lines = r.stdout.trim().split('\n');
  const named = (re: RegExp) => lines.find((l) => re.test(l)) ?? '';
  const out = { amd64: lines.at(-1) ?? '', arm64: named(/\/nodetruth-arm64-[0-9a-f]+\.oci\.tar$/), multiarch: named(/\/nodetruth-multiarch-[0-9a-f]+\.oci\.tar$/) };
  for (const [arch, archive] of Object.entries(out)) assert.ok(existsSync(archive), `scripts/build-image.sh named no ${arch} archive: ${r.stdout.slice(-600)}`);
  return { ...out, ms: Date.now() - started };
}
