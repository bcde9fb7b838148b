/**
 * nodetruth_eventloop_delay_max_seconds: the longest event-loop delay since start, never
 * reset by a scrape (prom-client's nodejs_eventloop_lag_max_seconds covers only the time
 * since the previous scrape, so a dashboard's scrape would hide a stall from the bench).
 */
import t from 'tap';
import { testApp } from '../helpers/app.js';

const gauge = (text: string) => Number(/^nodetruth_eventloop_delay_max_seconds (\S+)$/m.exec(text)?.[1]);

t.test('a stall shows in the gauge, and still after another scrape', async (t) => {
  const agent = await testApp(['--host-root', '/nonexistent-host-root', '--cri-endpoint', 'unix:///nonexistent.sock', '--kubelet-healthz', 'http://127.0.0.1:1/healthz']);
  t.teardown(() => agent.close());
  await agent.app.inject('/metrics'); // starts the monitor with the first NodeMetrics at the latest
  await new Promise((r) => setTimeout(r, 50));
  // a synchronous stretch of 150 ms: the monitor's 10 ms timer fires that much late, whatever the machine
  const until = performance.now() + 150;
  while (performance.now() < until);
  await new Promise((r) => setTimeout(r, 30));
  const first = gauge((await agent.app.inject('/metrics')).body);
  const second = gauge((await agent.app.inject('/metrics')).body);
  t.ok(first >= 0.15, `after a 150 ms stall: ${first} s`);
  t.ok(second >= first, `a second scrape does not reset it: ${second} s`);
});
