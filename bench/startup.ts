/**
 * Start-up: time from spawning `node dist/cli.js serve` to /readyz
 * answering 200, as a fresh debug pod does it, on the FAKE 1,000-container node
 * with its FAKE CRI runtime (readiness asks the runtime). Target < 500 ms.
 * Baseline in the same run: a bare `node -e ""` (the runtime's own start).
 *
 *   npx tsx bench/startup.ts [runs=9]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { makeFakeScaleHost } from '../test/fixtures/fake-node.js';
import { freePort, REPO, startFakeCriProcess, waitFor200 } from '../test/helpers/agent-process.js';
import { ensureBuilt, median, report, round } from './lib.js';

const [runs = 9] = process.argv.slice(2).map(Number);
ensureBuilt();
const host = await makeFakeScaleHost({ journal: false });
const cri = await startFakeCriProcess(host.options);

async function bareNode(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  return performance.now() - t0;
}

async function agentReady(): Promise<{ ms: number; readyz: unknown }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(REPO, 'dist/cli.js'), 'serve', '--listen', `127.0.0.1:${port}`, '--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (d) => stderr.push(String(d)));
  const p = { child, pid: child.pid!, lines: [], stderr, stop: async () => null };
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, p, 30_000, 2);
    const ms = performance.now() - t0;
    const readyz = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
    return { ms, readyz };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

try {
  await agentReady(); // page cache warm, as for a pulled image
  const agent: number[] = [];
  const bare: number[] = [];
  let readyz: unknown;
  for (let i = 0; i < runs; i++) {
    bare.push(await bareNode());
    const r = await agentReady();
    agent.push(r.ms);
    readyz = r.readyz;
  }
  report('startup', `npx tsx bench/startup.ts ${runs}`, {
    runs,
    msToReadyz200: { median: round(median(agent)), min: round(Math.min(...agent)), max: round(Math.max(...agent)), all: agent.map((x) => round(x, 0)) },
    bareNodeMs: { median: round(median(bare)) },
    agentMinusBareNodeMs: round(median(agent) - median(bare)),
    readyz,
    targetMs: 500,
  });
} finally {
  await cri.stop();
  host.cleanup();
}
