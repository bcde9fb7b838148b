// Builds, ahead of the end-to-end runs, every image they need: the agent image
// (scripts/build-image.sh) and both guests (the cluster checks boot each). Each is cached
// by the hash of its inputs, so the runs then find them built; a later run of this is a
// cache check.
//
//   node --import tsx test/e2e/prepare.ts
//
// scripts/test.sh starts it in the background beside `npm test`: the builds wait mostly on
// the Debian mirror, the npm registry and dpkg's unpacking, not on the CPU the tests use,
// and run one after another in a cold run's critical path otherwise (README, Timings).
// It must finish before a harness starts: a harness that finds an image missing builds it
// itself, and two builds of one image would both try to move it into place.
import { agentImageArchive, allArchArchives } from './agent-image.js';
import { ensureImage, SUITES } from './image.js';
import { log } from './util.js';

async function timed(name: string, work: () => Promise<unknown>): Promise<string> {
  const started = Date.now();
  await work();
  return `${name} ${((Date.now() - started) / 1000).toFixed(1)} s`;
}

const started = Date.now();
const results = await Promise.allSettled([
  // then the arm64 image and the multi-arch archive (test/e2e/arm64.ts), after the amd64
  // one the harnesses need first: build-image.sh builds one at a time per cache anyway.
  timed('agent image', agentImageArchive).then(async (amd64) => `${amd64}; ${await timed('arm64 + multi-arch image', allArchArchives)}`),
  ...SUITES.map((s) => timed(`${s} guest`, () => ensureImage(s))),
]);
const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
log(`prepared in ${((Date.now() - started) / 1000).toFixed(1)} s: ${results.map((r) => (r.status === 'fulfilled' ? r.value : `failed: ${String(r.reason).slice(0, 400)}`)).join('; ')}`);
// A failed build is not this step's verdict: the harness that needs the image builds it
// again in the foreground and fails there with the whole log.
process.exitCode = failed.length ? 1 : 0;
