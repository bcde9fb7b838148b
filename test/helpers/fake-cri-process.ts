/**
 * The FAKE CRI runtime of the fake 1,000-container node, as its own process so
 * it never shares the agent's (or the load generator's) event loop.
 *
 *   node --import tsx test/helpers/fake-cri-process.ts '{"pods":250,"perPod":4,"seed":"...","nowNs":"..."}'
 *
 * Prints one JSON line {"endpoint":"unix://...","containers":N} once it
 * listens; stops on SIGTERM/SIGINT or when stdin closes.
 */
import { FakeCriServer } from './fake-cri.js';
import { fakeScaleCriNode, fakeScaleOptions } from '../fixtures/fake-node.js';

const raw = JSON.parse(process.argv[2] ?? '{}') as { pods?: number; perPod?: number; seed?: string; nowNs?: string; hostile?: number };
const options = fakeScaleOptions({
  ...(raw.pods !== undefined ? { pods: raw.pods } : {}),
  ...(raw.perPod !== undefined ? { perPod: raw.perPod } : {}),
  ...(raw.seed !== undefined ? { seed: raw.seed } : {}),
  ...(raw.nowNs !== undefined ? { nowNs: BigInt(raw.nowNs) } : {}),
  ...(raw.hostile !== undefined ? { hostile: raw.hostile } : {}),
});
const server = new FakeCriServer(fakeScaleCriNode(options));
await server.start();
process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint, containers: server.node.containers.length, pods: server.node.pods.length })}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
