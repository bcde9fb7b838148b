#!/usr/bin/env node
// first: sizes libuv's thread pool before anything can start it (see threadpool.ts)
import './threadpool.js';
import { givesFlag } from './args.js';
import { ConfigError, flagHelp, loadConfig } from './config.js';
import type { App } from './server/app.js';
import { VERSION } from './version.js';

// Each command imports what it runs when it runs, so start-up pays only for it: `serve`
// loads neither the bundle, triage nor attach code before it listens, and `version`, `attach` and the
// kubectl plugin load no HTTP server, gRPC or protobuf.

const USAGE = `nodetruth ${VERSION}: what a Kubernetes node is really doing, read-only.

Usage:
  nodetruth serve [flags]     serve the HTTP API (default 127.0.0.1:7070)
  nodetruth attach <node>     run it in a debug pod on a node, port-forward, clean up on exit
                              (also as the kubectl plugin: kubectl nodetruth attach <node>)
  nodetruth fleet triage | get PATH | capture -o DIR
                              every node's agent through the API server, bounded; fleet --help
  nodetruth triage [flags]    one look at the node: findings with evidence; --json for JSON,
                              --window 2s for the CPU throttling sample; exits 0 ok, 1 warning,
                              2 critical, 3 could not run
  nodetruth timeline [flags]  what happened, oldest first: --since 15m, --until, --pod ns/name,
                              --source kernel|oom|runtime|journal|kube, --limit, --verbose, --json
  nodetruth capture [flags]   the node into a tar.gz bundle: every route's answer, the raw
                              evidence, manifest.json (-o FILE, --since 1h, --max-size 64MiB)
  nodetruth serve --bundle FILE   the same API answered from a bundle, offline
  nodetruth triage --bundle FILE  the triage report a bundle holds
  nodetruth timeline --bundle FILE  the timeline a bundle holds, narrowed by the same flags
  nodetruth version           print the version

Flags (each has an environment twin):
${flagHelp()}
`;

/**
 * SIGTERM ends the agent within 5 s at any moment. In-flight requests get
 * SHUTDOWN_GRACE_MS (3 s) to finish, then their work is aborted and they answer 503
 * (src/server/request-signal.ts); follow streams end at once with a final frame.
 * At CUT_CONNECTIONS_MS every connection still open (a client that does not read its
 * answer) is destroyed so close() can finish; EXIT_ANYWAY_MS is the last resort for
 * a handle that would keep the process alive.
 */
const CUT_CONNECTIONS_MS = 4000;
const EXIT_ANYWAY_MS = 4700;

async function serve(argv: string[]): Promise<void> {
  const { config } = loadConfig(argv);
  // the server and GET /v1/bundle, registered from bundle/ (the capture itself loads on its first request)
  const [{ createLogger }, { buildApp }, { closeSources, createSources }, { LIVE_ROUTES }, { listenOnAll }, { boundHeapGrowth }] = await Promise.all([import('./agent.js'), import('./server/app.js'), import('./sources.js'), import('./bundle/route.js'), import('./server/serve-addresses.js'), import('./server/plugins/heap-growth.js')]);
  // what each reading leaves behind is collected once the old space grows half again past what a full GC kept
  boundHeapGrowth();
  const log = createLogger(config);
  const shutdown = new AbortController();
  const sources = createSources(config, log);
  let app: App | null = null;
  let listening: import('./server/serve-addresses.js').Listening | null = null;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (!app?.server.listening) {
      // still starting: nothing is served yet, so nothing to finish
      log.info({ signal }, 'shutting down before serving');
      closeSources(sources);
      process.exit(0);
    }
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    shutdown.abort(); // follow streams end, in-flight requests get their grace
    const cut = setTimeout(() => {
      log.warn('connections still open; closing them');
      app?.server.closeAllConnections();
    }, CUT_CONNECTIONS_MS);
    cut.unref();
    const force = setTimeout(() => {
      log.warn('something still holds the process; exiting');
      process.exit(1);
    }, EXIT_ANYWAY_MS);
    force.unref();
    // the further addresses stop accepting first; the app's close ends their sockets with its own
    const extraClosed = listening?.close();
    await app.close();
    await extraClosed;
    clearTimeout(cut);
    closeSources(sources);
    log.info('stopped');
    // Every request has been answered or cut. What may still hold the loop is work
    // nobody waits for: a CRI call that grpc-js completes even after its channel is
    // closed, up to --cri-timeout later. Give it a moment to drain by itself, then go.
    const drain = setTimeout(() => {
      log.info({ pending: process.getActiveResourcesInfo() }, 'exiting with abandoned work pending');
      process.exit(0);
    }, 300);
    drain.unref();
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  app = await buildApp(sources, { shutdown: shutdown.signal, routes: LIVE_ROUTES });
  listening = await listenOnAll(app, config.listenAddresses, config.maxConnections);
  // from here on no error can end the agent: it is logged and counted (src/process-guard.ts);
  // one before this line is a start-up failure and exits non-zero
  (await import('./process-guard.js')).installProcessGuard(log);
  log.info({ hostRoot: config.hostRoot, criEndpoint: config.criEndpoint, auth: config.auth, listen: listening.addresses.map((a) => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`)) }, 'nodetruth serving');
}

/** Whether `serve` or `triage` was asked for a bundle (then the bundle's code answers). */
const wantsBundle = (argv: string[]) => givesFlag(argv, 'bundle');

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'serve':
      if (wantsBundle(rest)) await (await import('./bundle/cli.js')).serveBundleMain(rest);
      else await serve(rest);
      return -1; // keep running
    case 'attach':
      return (await import('./launcher/attach.js')).attachMain(rest);
    case 'fleet':
      return (await import('./fleet/fleet.js')).fleetMain(rest);
    case 'triage':
      return wantsBundle(rest) ? (await import('./bundle/cli.js')).triageBundleMain(rest) : (await import('./triage/cli.js')).triageMain(rest);
    case 'timeline':
      return (await import('./cli/timeline.js')).timelineMain(rest);
    case 'capture':
      return (await import('./bundle/cli.js')).captureMain(rest);
    case 'version':
    case '--version':
      process.stdout.write(`nodetruth ${VERSION}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`nodetruth: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`nodetruth: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`nodetruth: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
