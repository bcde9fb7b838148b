/**
 * The Dockerfile, as far as it can be tested without a container build (none can run on
 * these machines): every file it copies exists and is not dockerignored, the stages it
 * copies from exist, and its commands work when run the way the stages run them: the
 * `build` stage's tsc, the `deps` stage's production install (npm ci --omit=dev
 * --ignore-scripts and the prune, against the npm registry), then the entrypoint from that
 * production tree: `nodetruth version`, `nodetruth serve` answering /healthz, the
 * HEALTHCHECK command, a clean exit on SIGTERM, and `kubectl nodetruth` through the real
 * kubectl's plugin lookup.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { freePort } from '../helpers/agent-process.js';

// tsc (~30 s) and a production `npm ci` from the registry (~20-60 s) take longer than
// .taprc's 120 s per file on a loaded 2-core machine.
t.setTimeout(600_000);

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
/** Node 24 first on PATH (the test's own node), as in the node:24 image. */
const NODE_DIR = path.dirname(process.execPath);

interface Instruction {
  cmd: string;
  args: string;
  stage: string | null;
}

/** Instructions in order, continuation lines joined, comments dropped, each tagged with its stage. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage: string | null = null;
  let buf = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!buf && (line === '' || line.startsWith('#'))) continue;
    if (buf && line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      buf += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (buf + line).trim();
    buf = '';
    const m = /^(\w+)\s+(.*)$/s.exec(full);
    if (!m) continue;
    const cmd = m[1]!.toUpperCase();
    if (cmd === 'FROM') stage = /\sAS\s+(\S+)$/i.exec(m[2]!)?.[1] ?? 'final';
    out.push({ cmd, args: m[2]!, stage });
  }
  return out;
}

const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const ins = parseDockerfile(dockerfile);
const runsIn = (stage: string) => ins.filter((i) => i.stage === stage && i.cmd === 'RUN').map((i) => i.args);

t.test('the files it copies exist, are not dockerignored, and the stages it copies from exist', async (t) => {
  const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = new Set(ins.filter((i) => i.cmd === 'FROM').map((i) => /\sAS\s+(\S+)$/i.exec(i.args)?.[1]).filter(Boolean));
  const copies = ins.filter((i) => i.cmd === 'COPY');
  t.ok(copies.length >= 6);
  for (const c of copies) {
    const words = c.args.split(/\s+/);
    const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
    const srcs = words.filter((w) => !w.startsWith('--')).slice(0, -1);
    if (from) {
      t.ok(stages.has(from), `COPY --from=${from} names an earlier stage`);
      continue;
    }
    for (const src of srcs) {
      t.ok(existsSync(path.join(ROOT, src)), `COPY ${src} exists`);
      t.notOk(ignored.includes(src.split('/')[0]!), `COPY ${src} is not in .dockerignore`);
    }
  }
  // what the runtime copies out of the build stage is where tsconfig.build.json puts it
  const buildCfg = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string } };
  t.ok(copies.some((c) => c.args === `--from=build /src/${buildCfg.compilerOptions.outDir} ./dist`));
});

t.test('entrypoint, labels, healthcheck, root with its reason', async (t) => {
  const final = ins.filter((i) => i.stage === 'final');
  t.same(JSON.parse(final.find((i) => i.cmd === 'ENTRYPOINT')!.args), ['nodetruth']);
  t.same(JSON.parse(final.find((i) => i.cmd === 'CMD')!.args), ['serve']);
  t.ok(final.some((i) => i.cmd === 'RUN' && i.args.includes(`ln -s /app/${pkg.bin.nodetruth} /usr/local/bin/nodetruth`)), 'nodetruth on PATH is the package bin');
  const labels = final.filter((i) => i.cmd === 'LABEL').map((i) => i.args).join(' ');
  for (const l of ['title', 'description', 'version', 'licenses', 'source']) t.match(labels, `org.opencontainers.image.${l}=`);
  t.match(labels, `org.opencontainers.image.version="${pkg.version}"`, 'label version follows package.json');
  t.ok(final.some((i) => i.cmd === 'HEALTHCHECK' && i.args.includes('/healthz')));
  t.ok(final.some((i) => i.cmd === 'USER' && /^0(:0)?$/.test(i.args)));
  t.match(dockerfile, /Root, on purpose\. nodetruth reads \/proc\/<pid> of processes that belong to other users/);
  t.ok(final.some((i) => i.cmd === 'RUN' && /apt-get install .*systemd/.test(i.args)), 'a journalctl in the image');
  t.match(ins.find((i) => i.cmd === 'ARG' && i.args.startsWith('NODE_IMAGE='))!.args, /^NODE_IMAGE=node:24-bookworm-slim$/, 'Node 24 LTS');
  t.match(ins.find((i) => i.cmd === 'ARG' && i.args.startsWith('DEBIAN_IMAGE='))!.args, /bookworm-slim$/, 'the runtime base is the same Debian release');
});

t.test('multi-platform: JavaScript stages on the builder\'s platform, the runtime and its node on the target\'s', async (t) => {
  const froms = new Map(ins.filter((i) => i.cmd === 'FROM').map((i) => [i.stage, i.args]));
  t.match(froms.get('build'), /^--platform=\$BUILDPLATFORM \$\{NODE_IMAGE\} AS build$/);
  t.match(froms.get('deps'), /^--platform=\$BUILDPLATFORM \$\{NODE_IMAGE\} AS deps$/);
  // buildah 1.28 carries a stage's --platform over to the next stage that names none
  for (const [stage, args] of froms) t.match(args, /^--platform=\$(BUILDPLATFORM|TARGETPLATFORM) /, `stage ${stage} names its platform`);
  t.match(froms.get('final'), /^--platform=\$TARGETPLATFORM \$\{DEBIAN_IMAGE\}$/);
  const nodeStage = ins.find((i) => i.cmd === 'COPY' && i.stage === 'final' && / \/usr\/local\/bin\/node$/.test(i.args))!;
  const from = /--from=(\S+)/.exec(nodeStage.args)![1]!;
  t.match(froms.get(from), /^--platform=\$TARGETPLATFORM \$\{NODE_IMAGE\} /, 'the runtime\'s node is the target platform\'s');
  t.notOk(ins.some((i) => i.cmd === 'COPY' && i.stage === 'final' && /--from=(build|deps) \/usr\//.test(i.args)), 'no binary from a builder-platform stage');
});

/** Files under dir (recursively, symlinks not followed) whose name matches. */
function findFiles(dir: string, match: (name: string) => boolean, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) findFiles(p, match, out);
    else if (match(e.name)) out.push(p);
  }
  return out;
}

/** The HEALTHCHECK's exec form, as an argv. */
function healthcheckArgv(): string[] {
  const hc = ins.find((i) => i.cmd === 'HEALTHCHECK')!.args;
  return JSON.parse(hc.slice(hc.indexOf('CMD ') + 4)) as string[];
}


t.test('the stages\' commands work, and the entrypoint runs from the production install', async (t) => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'nodetruth-image-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const env = { ...process.env, PATH: `${NODE_DIR}:${process.env.PATH ?? ''}`, npm_config_cache: path.join(tmp, 'npm-cache'), npm_config_update_notifier: 'false' };

  // build stage: package*.json, tsconfig*.json and src/ in a WORKDIR, then its RUN tsc
  // (node_modules linked from the checkout instead of the stage's `npm ci`).
  const build = path.join(tmp, 'src');
  mkdirSync(build);
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) cpSync(path.join(ROOT, f), path.join(build, f));
  cpSync(path.join(ROOT, 'src'), path.join(build, 'src'), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(build, 'node_modules'));
  const tsc = runsIn('build').find((r) => r.includes('tsc'))!;
  t.equal(tsc, 'node node_modules/typescript/bin/tsc -p tsconfig.build.json');
  await run('sh', ['-c', tsc], { cwd: build, env });
  t.ok(existsSync(path.join(build, 'dist', 'cli.js')), 'tsc built dist/cli.js');

  // deps stage: its RUN, as written, in a WORKDIR holding package.json and the lock.
  const app = path.join(tmp, 'app');
  mkdirSync(app);
  for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(ROOT, f), path.join(app, f));
  const [install] = runsIn('deps');
  t.match(install!, /npm ci --omit=dev --ignore-scripts/);
  await run('sh', ['-c', install!], { cwd: app, env, maxBuffer: 16 << 20 });
  t.notOk(existsSync(path.join(app, 'dist')), 'no prepare build ran');
  t.notOk(existsSync(path.join(app, 'node_modules', 'typescript')), 'no dev dependencies');
  t.notOk(existsSync(path.join(app, 'node_modules', 'tap')), 'no dev dependencies');
  t.ok(existsSync(path.join(app, 'node_modules', 'fastify', 'package.json')));
  // The deps stage runs on the builder's platform for every target: nothing in the
  // production install may be built or chosen per platform for Node. The only native
  // binaries allowed are bare-*'s prebuilds (every platform's, for the Bare runtime).
  const native = findFiles(path.join(app, 'node_modules'), (n) => n.endsWith('.node') || n === 'binding.gyp')
    .map((f) => path.relative(app, f))
    .filter((f) => !/^node_modules\/bare-[a-z-]+\/prebuilds\//.test(f));
  t.same(native, [], 'no native code for Node in the production dependencies');

  // runtime stage: the same layout as the image's /app, nodetruth linked onto PATH.
  cpSync(path.join(build, 'dist'), path.join(app, 'dist'), { recursive: true });
  cpSync(path.join(ROOT, 'proto'), path.join(app, 'proto'), { recursive: true });
  const bin = path.join(tmp, 'bin');
  mkdirSync(bin);
  chmodSync(path.join(app, 'dist', 'cli.js'), 0o755);
  symlinkSync(path.join(app, 'dist', 'cli.js'), path.join(bin, 'nodetruth'));
  symlinkSync(path.join(app, 'dist', 'cli.js'), path.join(bin, 'kubectl-nodetruth'));
  const rtEnv = { ...env, PATH: `${bin}:${env.PATH}`, NODE_ENV: 'production' };

  const version = await run('nodetruth', ['version'], { env: rtEnv });
  t.equal(version.stdout, `nodetruth ${pkg.version}\n`);

  // serve on a loopback port with an empty host root; /healthz; HEALTHCHECK; SIGTERM
  const hostRoot = path.join(tmp, 'host');
  mkdirSync(hostRoot);
  const port = await freePort();
  const child = spawn('nodetruth', ['serve', '--listen', `127.0.0.1:${port}`, '--host-root', hostRoot, '--log-level', 'warn'], { env: rtEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('close', (code, signal) => r({ code, signal })));
  t.teardown(() => void child.kill('SIGKILL'));
  let health: Response | null = null;
  for (let i = 0; i < 150 && !health; i++) {
    health = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
    if (!health) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(health?.status, 200, `serve answers /healthz ${stderr}`);
  t.same(await health?.json(), { status: 'ok', version: pkg.version });

  const [hcCmd, ...hcArgs] = healthcheckArgv();
  const hc = await run(hcCmd!, hcArgs, { env: { ...rtEnv, NODETRUTH_LISTEN: `127.0.0.1:${port}` } }).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  t.equal(hc, 0, 'HEALTHCHECK passes against the running agent');
  const hcDown = await run(hcCmd!, hcArgs, { env: { ...rtEnv, NODETRUTH_LISTEN: `127.0.0.1:${await freePort()}` } }).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  t.equal(hcDown, 1, 'HEALTHCHECK fails when nothing answers');

  child.kill('SIGTERM');
  const end = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
  t.same(end, { code: 0, signal: null }, 'SIGTERM: the agent exits, cleanly');

  // the kubectl plugin: the real kubectl finds kubectl-nodetruth on PATH and runs it
  const kubectl = await run('kubectl', ['nodetruth', 'version'], { env: rtEnv }).catch((e: Error) => e);
  if (kubectl instanceof Error) t.comment(`skipped: no usable kubectl here: ${kubectl.message}`);
  else t.equal(kubectl.stdout, `nodetruth ${pkg.version}\n`, 'kubectl nodetruth version');
  const help = await run('kubectl-nodetruth', ['attach', '--help'], { env: rtEnv });
  t.match(help.stdout, 'kubectl nodetruth attach <node>');
});
