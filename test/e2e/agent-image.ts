// The agent image's OCI archive, built by scripts/build-image.sh from the Dockerfile (cached by
// its inputs: a hit answers at once). Shared by the harness (run.ts) and prepare.ts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runOk } from './util.js';
import { projectRoot } from './vm.js';

export async function agentImageArchive(): Promise<{ archive: string; ms: number }> {
  const started = Date.now();
  const r = await runOk('bash', [join(projectRoot, 'scripts', 'build-image.sh')], { cwd: projectRoot, timeoutMs: 30 * 60_000 });
  const archive = r.stdout.trim().split('\n').at(-1) ?? '';
  assert.ok(existsSync(archive), `scripts/build-image.sh named no archive: ${r.stdout.slice(-400)}`);
  return { archive, ms: Date.now() - started };
}
