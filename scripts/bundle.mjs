#!/usr/bin/env node
/**
 * The agent bundled by esbuild for the image and the package's bin: src/cli.ts and the
 * packages it imports become dist/nodetruth.mjs (the entry: what `nodetruth version` or
 * `attach` need) plus chunks dist/nodetruth-<hash>.mjs, one per set of modules that a
 * dynamic import() in src/ loads on first use (serve's server, triage, the capture, ...).
 * `node dist/nodetruth.mjs <command>` runs exactly as `node dist/cli.js <command>`; tsc
 * still builds dist/ and checks the types, this only bundles. Node then resolves, reads and
 * compiles a few files instead of ~480 modules when `serve` starts (bench/startup.ts).
 *
 *   node scripts/bundle.mjs            (npm run bundle)
 *
 * What stays outside, read at run time from beside dist/:
 * - proto/, package.json and deploy/debug-profile.yaml: each `new URL('<relative>',
 *   import.meta.url)` in src/ names a file relative to where tsc puts that module
 *   (dist/<same path>.js); every output file sits in dist/ itself, so each such path is
 *   rewritten to point from dist/ to the same file.
 * - what src/ loads with createRequire at first use (@kubernetes/client-node, yaml, re2js
 *   for the pattern worker): esbuild does not follow those calls, so they stay lazy and come
 *   from node_modules. @kubernetes/client-node is also marked external: no import of it
 *   may put its ~2,000 modules into a start.
 * Whitespace and syntax are minified (less source to read, scan and keep in memory); names
 * are kept, so stack traces and fastify's plugin names still say which function.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');
export const ENTRY = path.join(DIST, 'nodetruth.mjs');
/** Every file the bundle writes: the entry and its chunks. */
export const isBundleFile = (name) => /^nodetruth(-[A-Z0-9]+)?\.mjs$/.test(name);

/** `new URL('../x', import.meta.url)` with a literal relative path. */
const URL_RE = /new URL\((['"])(\.\.?\/[^'"\n]+)\1,\s*import\.meta\.url\)/g;

/** Rewrites module-relative file URLs from the module's place under dist/ to dist/ itself. */
const relocateUrls = (outdir) => ({
  name: 'relocate-import-meta-urls',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async ({ path: file }) => {
      if (!file.startsWith(SRC + path.sep)) return undefined;
      const text = await readFile(file, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const asBuilt = path.join(DIST, path.relative(SRC, file)).replace(/\.ts$/, '.js');
      const contents = text.replace(URL_RE, (_m, q, rel) => {
        let fromOut = path.relative(outdir, path.resolve(path.dirname(asBuilt), rel)).split(path.sep).join('/');
        if (!fromOut.startsWith('.')) fromOut = `./${fromOut}`;
        return `new URL(${q}${fromOut}${q}, import.meta.url)`;
      });
      return { contents, loader: 'ts' };
    });
  },
});

/**
 * The entry: src/threadpool.ts must run before any other module can start libuv's pool
 * (tsc's dist/cli.js has it as its first import). With code splitting esbuild evaluates the
 * chunks an entry imports before the entry's own inlined modules, so the entry imports
 * only threadpool.ts and then loads the CLI.
 */
const entry = {
  name: 'entry',
  setup(b) {
    b.onResolve({ filter: /^nodetruth:entry$/ }, () => ({ path: 'entry', namespace: 'nodetruth' }));
    b.onLoad({ filter: /.*/, namespace: 'nodetruth' }, () => ({
      contents: "#!/usr/bin/env node\nimport './threadpool.ts';\nawait import('./cli.ts');\n",
      resolveDir: SRC,
      loader: 'js',
    }));
  },
};

/** Builds the bundle into `outdir` (default dist/), replacing the one there. */
export async function bundle({ outdir = DIST, metafile = false, ...options } = {}) {
  mkdirSync(outdir, { recursive: true });
  for (const f of readdirSync(outdir, { withFileTypes: true })) if (f.isFile() && isBundleFile(f.name)) rmSync(path.join(outdir, f.name));
  return build({
    entryPoints: { nodetruth: 'nodetruth:entry' },
    outdir,
    chunkNames: 'nodetruth-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // CommonJS packages (fastify, pino, grpc-js, protobufjs) call require() for Node's
    // built-ins; an ES module has none, so each output file makes one.
    banner: { js: "import { createRequire as __ntCreateRequire } from 'node:module';\nconst require = __ntCreateRequire(import.meta.url);" },
    external: ['@kubernetes/client-node'],
    plugins: [entry, relocateUrls(outdir)],
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    legalComments: 'none',
    metafile,
    logLevel: 'warning',
    ...options,
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await bundle({ metafile: process.argv.includes('--meta') });
  if (r.metafile) process.stdout.write(JSON.stringify(r.metafile));
}
