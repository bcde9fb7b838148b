/**
 * /v1/node/drift on a node without cluster access answers its 503 before
 * @kubernetes/client-node is loaded (its first load takes 62–86 s in the node
 * VM): the access check comes first. This file runs in its own
 * process, where nothing else loads client-node, and the 503 must leave it
 * unloaded. Through the real HTTP server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { kubeClientLoaded } from '../../src/readers/kube/api.js';
import { testApp } from '../helpers/app.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-drift-noaccess-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

for (const [name, flags, env, reason] of [
  ['no kubeconfig, not in a pod', [], {}, /no cluster access: not running in a pod/],
  ['a kubeconfig that does not exist', ['--kubeconfig', path.join(dir, 'nope.yaml')], {}, /kubeconfig .*nope\.yaml does not exist/],
] as const) {
  t.test(`${name}: 503 with the reason, client-node never loaded`, async (t) => {
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    const agent = await testApp(['--host-root', dir, '--node-name', 'node-a', ...flags], env);
    t.teardown(async () => {
      await agent.close();
      if (saved.host !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved.host;
      if (saved.port !== undefined) process.env.KUBERNETES_SERVICE_PORT = saved.port;
    });
    await agent.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = agent.app.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/v1/node/drift`);
    t.equal(res.status, 503);
    t.match(res.headers.get('content-type'), /^application\/problem\+json/);
    t.match(((await res.json()) as { detail: string }).detail, reason);
    t.equal(kubeClientLoaded(), false, 'the 503 did not wait for @kubernetes/client-node to load');
  });
}
