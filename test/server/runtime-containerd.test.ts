/**
 * The runtime routes against a real containerd started by this test (read-only
 * CRI calls only), and its failure modes: frozen, killed and restarted.
 */
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { containerdMissing, TEST_IMAGE, TestContainerd } from '../helpers/containerd.js';

const missing = containerdMissing();
if (missing) {
  t.plan(0, `skipped: real containerd unavailable: ${missing}`);
} else {
  const ctrd = new TestContainerd();
  await ctrd.start();
  await ctrd.importTestImage();
  const agent = await testApp(['--cri-endpoint', ctrd.endpoint, '--cri-timeout', '1s', '--host-root', '/']);
  t.teardown(async () => {
    await agent.close();
    await ctrd.destroy();
  });
  const get = (url: string, headers: Record<string, string> = {}) => agent.app.inject({ method: 'GET', url, headers });

  t.test('/v1/runtime reports containerd, its conditions and cgroup driver', async (t) => {
    const res = await get('/v1/runtime');
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.equal(body.runtimeName, 'containerd');
    t.match(body.runtimeVersion, /^1\.\d+\.\d+/);
    t.equal(body.runtimeApiVersion, 'v1');
    const cond = Object.fromEntries(body.conditions.map((c: { type: string }) => [c.type, c]));
    t.equal(cond.RuntimeReady.status, true);
    t.equal(cond.NetworkReady.status, false, 'no CNI config in the test containerd');
    t.equal(cond.NetworkReady.reason, 'NetworkPluginNotReady');
    t.match(cond.NetworkReady.message, /cni plugin not initialized/);
    t.equal(body.cgroupDriver, 'cgroupfs', 'SystemdCgroup is off in the test config');
    t.match(body.info.config.cni.confDir, ctrd.dir, 'verbose config parsed from its JSON string');
    // 1.6 sends no RuntimeFeatures and no handlers: "not reported", never "not supported"
    t.equal(body.features, null, 'features not reported: null, not false');
    t.same(body.runtimeHandlers, []);
  });

  t.test('/v1/runtime as text', async (t) => {
    const res = await get('/v1/runtime?format=text');
    t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    t.match(res.body, /^CONDITION\s+STATUS\s+REASON\s+MESSAGE\n/);
    t.match(res.body, /\nNetworkReady\s+false\s+NetworkPluginNotReady/);
    t.match(res.body, /\nfeatures\s+not reported by the runtime\n/);
    t.match(res.body, /\nhandlers\s+not reported by the runtime\n/);
  });

  t.test('/v1/images lists the imported image with its size', async (t) => {
    const res = await get('/v1/images');
    t.equal(res.statusCode, 200);
    const img = res.json().items.find((i: { repoTags: string[] }) => i.repoTags.includes(TEST_IMAGE));
    t.ok(img, 'imported tag is listed');
    t.match(img.id, /^sha256:[0-9a-f]{64}$/);
    t.ok(img.size > 500_000, `size ${img.size} holds busybox`);
    const text = await get('/v1/images', { accept: 'text/plain' });
    t.match(text.body, /^IMAGE\s+TAG\s+IMAGE ID\s+SIZE\n/);
    t.match(text.body, /localhost\/nodetruth\/busybox\s+test\s+[0-9a-f]{13}\s+\d/);
    const filtered = await get('/v1/images?image=nothing-like-this');
    t.same(filtered.json().items, []);
  });

  t.test('/v1/images/fs reports image filesystem usage above 0', async (t) => {
    // containerd samples snapshot usage every stats_collect_period (1 s here): wait for a sample after the import.
    let fs: { mountpoint: string; usedBytes: number; inodesUsed: number } = { mountpoint: '', usedBytes: 0, inodesUsed: 0 };
    for (let i = 0; i < 50 && !(fs.usedBytes > 0); i++) {
      const res = await get('/v1/images/fs');
      t.equal(res.statusCode, 200);
      fs = res.json().imageFilesystems[0];
      if (!(fs.usedBytes > 0)) await new Promise((r) => setTimeout(r, 100));
    }
    t.match(fs.mountpoint, ctrd.dir);
    t.ok(fs.usedBytes > 0, `used ${fs.usedBytes}`);
    t.ok(fs.inodesUsed > 0);
  });

  t.test('empty pod and container lists', async (t) => {
    // every answer states when its reading began; the rest is the list
    const body = async (url: string) => {
      const { observedAt, ...rest } = (await get(url)).json() as Record<string, unknown>;
      t.type(observedAt, 'string');
      return rest;
    };
    t.same(await body('/v1/pods'), { items: [] });
    // a container list names the containers whose status failed (none here) since 77fa330
    t.same(await body('/v1/containers?state=running'), { items: [], warnings: [] });
    const text = await get('/v1/containers?format=text');
    t.equal(text.body, 'CONTAINER   IMAGE   CREATED   STATE   NAME   ATTEMPT   POD ID   POD   NAMESPACE\n');
  });

  t.test('unknown ids are 404 problems', async (t) => {
    const res = await get('/v1/containers/abc123');
    t.equal(res.statusCode, 404);
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.match(res.json(), { status: 404, title: 'Not found', detail: /no container with id or id prefix abc123/ });
    t.equal((await get('/v1/pods/abc123')).statusCode, 404);
  });

  t.test('/readyz names the runtime', async (t) => {
    const res = await get('/readyz');
    t.equal(res.statusCode, 200);
    t.match(res.json().sources.runtime, { ok: true, detail: /^containerd 1\./ });
  });

  t.test('frozen containerd: 504 at the deadline, other routes still answer', async (t) => {
    await ctrd.freeze();
    try {
      const started = Date.now();
      const res = await get('/v1/runtime');
      const ms = Date.now() - started;
      t.equal(res.statusCode, 504);
      t.match(res.json().detail, /^runtime did not answer within 1s/);
      // not before the deadline (an upper bound would fail on a loaded machine without a defect)
      t.ok(ms >= 950, `answered after ${ms} ms, deadline 1 s`);
      t.equal((await get('/healthz')).statusCode, 200);
      const ready = await get('/readyz');
      t.equal(ready.statusCode, 200);
      t.equal(ready.json().sources.runtime.ok, false);
    } finally {
      ctrd.thaw();
    }
    t.equal((await get('/v1/runtime')).statusCode, 200, 'answers again after SIGCONT');
  });

  t.test('killed and restarted containerd: 503, then recovery without restarting the agent', async (t) => {
    await ctrd.stop();
    const down = await get('/v1/containers');
    t.equal(down.statusCode, 503);
    // a call made before the agent's channel has seen the socket close is "Connection dropped"; one after, a refused connect
    t.match(down.json().detail, new RegExp(`^runtime unreachable at ${ctrd.socket}: (connect (ENOENT|ECONNREFUSED)|Connection dropped)`));
    await ctrd.start();
    let status = 0;
    for (let i = 0; i < 30 && status !== 200; i++) {
      status = (await get('/v1/runtime')).statusCode;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    t.equal(status, 200, 'the same agent reaches the new containerd');
  });

  t.test('audit lines: one per request, with route, status and bytes', async (t) => {
    const before = agent.logs.length;
    await get('/v1/images?format=text');
    const audit = agent.logs.slice(before).filter((l) => l.audit);
    t.equal(audit.length, 1);
    t.match(audit[0]!.audit, { method: 'GET', route: '/v1/images', status: 200, query: { format: 'text' }, user: null });
  });
}
