/**
 * GET /v1/containers on the FAKE 1,000-container node against the raw CRI calls
 * it is made of, in the same run. Both talk to the same FAKE CRI
 * runtime (its own process):
 *
 * - raw: grpc-js directly, one channel, ListContainers + ListPodSandbox, then
 *   ContainerStatus for every container, 16 at a time (the agent's concurrency);
 *   no conversion, no JSON. The floor of any answer to "crictl ps -a" + status.
 * - agent: an HTTP GET to the agent process (dist/cli.js): the same calls,
 *   normalization, the join, sorting, JSON, HTTP.
 *
 * The agent keeps a live container's status for 1 s while its listed state is
 * unchanged (DESIGN.md), so rounds are 1.1 s apart: every agent round makes
 * every ContainerStatus call for the running containers (the exited ones' are
 * kept while they are listed). A warm figure (back-to-back) is reported beside it.
 *
 *   npx tsx bench/containers.ts [rounds=15] [pods=250] [perPod=4]
 */
import * as grpc from '@grpc/grpc-js';
import { criServices } from '../src/readers/cri/proto.js';
import { mapLimit } from '../src/lib/concurrency.js';
import { fakeNodeAgent, median, pct, report, round, timeIt } from './lib.js';

const [rounds = 15, pods = 250, perPod = 4] = process.argv.slice(2).map(Number);
const node = await fakeNodeAgent({ pods, perPod, journal: false });
const { RuntimeService } = criServices();
const raw = new RuntimeService(`unix:${node.cri.endpoint.replace(/^unix:\/\//, '')}`, grpc.credentials.createInsecure(), {
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
});
const call = <T>(method: string, req: object) =>
  new Promise<T>((resolve, reject) =>
    (raw as unknown as Record<string, Function>)[method]!.call(raw, req, { deadline: Date.now() + 10_000 }, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
  );

try {
  const rawRound = async () => {
    const [list] = await Promise.all([call<{ containers: { id: string }[] }>('ListContainers', {}), call('ListPodSandbox', {})]);
    await mapLimit(list.containers, 16, (c) => call('ContainerStatus', { containerId: c.id, verbose: false }));
    return list.containers.length;
  };
  let bytes = 0;
  const agentRound = async () => {
    const res = await fetch(`${node.agent.url}/v1/containers`);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`status ${res.status}: ${text.slice(0, 200)}`);
    bytes = text.length;
    return (JSON.parse(text) as { items: unknown[] }).items.length;
  };
  for (let i = 0; i < 3; i++) {
    await rawRound();
    await agentRound();
  }
  const n = await agentRound();
  if (n !== node.host.node.containers.length) throw new Error(`agent listed ${n} containers, the runtime has ${node.host.node.containers.length}`);

  const s = { raw: [] as number[], agent: [] as number[], agentWarm: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    await new Promise((r) => setTimeout(r, 1100));
    // alternate which goes first, so neither always meets a cooler machine
    if (i % 2 === 0) {
      s.raw.push((await timeIt(rawRound)).ms);
      await new Promise((r) => setTimeout(r, 1100));
      s.agent.push((await timeIt(agentRound)).ms);
    } else {
      s.agent.push((await timeIt(agentRound)).ms);
      s.raw.push((await timeIt(rawRound)).ms);
    }
    s.agentWarm.push((await timeIt(agentRound)).ms);
  }
  const m = { raw: median(s.raw), agent: median(s.agent), agentWarm: median(s.agentWarm) };
  report('containers', `npx tsx bench/containers.ts ${rounds} ${pods} ${perPod}`, {
    containers: n,
    exited: node.host.node.containers.filter((c) => c.state === 'CONTAINER_EXITED').length,
    rounds,
    responseBytes: bytes,
    medianMs: { raw: round(m.raw), agent: round(m.agent), agentWarmCache: round(m.agentWarm) },
    p95Ms: { raw: round(pct(s.raw, 95)), agent: round(pct(s.agent, 95)) },
    ratio: { agentVsRaw: round(m.agent / m.raw), agentWarmVsRaw: round(m.agentWarm / m.raw) },
    target: 1.5,
  });
} finally {
  raw.close();
  await node.stop();
}
