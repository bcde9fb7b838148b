import { Writable } from 'node:stream';
import { createLogger } from '../../src/agent.js';
import { loadConfig } from '../../src/config.js';
import { LIVE_ROUTES } from '../../src/bundle/route.js';
import { buildApp, type App, type AppDeps } from '../../src/server/app.js';
import { closeSources, createSources } from '../../src/sources.js';

export interface TestApp {
  app: App;
  /** the app's sources (src/sources.ts) and its shutdown signal */
  deps: AppDeps;
  /** Every log line the agent wrote, parsed (audit lines among them). */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * The real app, built from command-line flags as `nodetruth serve` would (but --max-age 0
 * unless given), with its log captured in memory. Tests call it with `app.inject()`.
 */
export async function testApp(flags: string[], env: NodeJS.ProcessEnv = {}): Promise<TestApp> {
  // tests change the node between requests and expect the next answer to see it: the strict rule,
  // unless the test gives --max-age itself
  const { config } = loadConfig(flags, { NODETRUTH_MAX_AGE: '0', ...env });
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const log = createLogger({ logLevel: 'info' }, sink);
  const shutdown = new AbortController();
  const deps: AppDeps = { ...createSources(config, log), shutdown: shutdown.signal };
  const app = await buildApp(deps, { shutdown: shutdown.signal, routes: LIVE_ROUTES });
  await app.ready();
  return {
    app,
    deps,
    logs,
    async close() {
      shutdown.abort();
      await app.close();
      closeSources(deps);
    },
  };
}
