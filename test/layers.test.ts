/**
 * Dependencies point one way (DESIGN.md "Layout"): every relative import of every file
 * under src/ (static, re-export, side effect and dynamic import(), type-only ones too)
 * is checked against the layer order below. A layer imports its own and lower ones;
 * lib imports only lib; bundle may import server, and nothing in server imports bundle.
 *
 * Imports against the grain that another change is removing are listed in KNOWN with
 * the reason; any other one fails. A KNOWN entry that no longer happens is named in a
 * comment, to be dropped from the list.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Each top-level folder or root module of src/ and its rank: a module imports ranks up to its own. */
const RANK: Record<string, number> = {
  lib: 0,
  // mechanisms at the root and data every layer reads: the code table, records, rules as tables
  format: 1,
  validate: 1,
  version: 1,
  args: 1,
  errors: 1,
  model: 1,
  rules: 1,
  readers: 2,
  view: 3,
  // the composition of readers and views into a reading, and the exits' own mechanisms
  config: 4,
  sources: 4,
  deadlines: 4,
  reading: 4,
  agent: 4,
  threadpool: 4,
  'process-guard': 4,
  redact: 4,
  // presenters
  metrics: 5,
  triage: 5,
  server: 6,
  bundle: 7,
  launcher: 8,
  fleet: 9,
  cli: 10,
};

/** "file -> layer" pairs against the grain that are known and being removed elsewhere. */
const KNOWN: Record<string, string> = {
  'readers/cni/cni.ts -> redact': 'redaction moves to where data leaves the agent',
  'readers/cri/normalize.ts -> redact': 'redaction moves to where data leaves the agent',
  'readers/journal/record.ts -> redact': 'redaction moves to where data leaves the agent',
  'readers/journal/file-log.ts -> redact': 'redaction moves to where data leaves the agent',
  'readers/podlogs/cri-log.ts -> redact': 'redaction moves to where data leaves the agent',
  'view/kernel-log.ts -> redact': 'redaction moves to where data leaves the agent',
  'readers/node/facts.ts -> view': 'disk use is a join of the view, not a reader',
  'errors.ts -> readers': 'the SourceError type belongs with the code table',
};

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The layer of a path under src/: its top-level folder, or the root module's name. */
const layerOf = (file: string): string => {
  const rel = path.relative(SRC, file);
  const slash = rel.indexOf(path.sep);
  return slash < 0 ? rel.replace(/\.ts$/, '') : rel.slice(0, slash);
};

/** Relative import specifiers of a source text: from '…', import '…', import('…'). */
const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"\n]{1,300})['"]/g;

function againstTheGrain(): { pair: string; line: string }[] {
  const found: { pair: string; line: string }[] = [];
  for (const file of tsFiles(SRC)) {
    const from = layerOf(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const target = path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts');
      if (!target.startsWith(SRC)) continue;
      const to = layerOf(target);
      if (to === from) continue;
      const rf = RANK[from];
      const rt = RANK[to];
      const wrong = rf === undefined || rt === undefined || (from === 'lib' ? true : rt > rf);
      if (!wrong) continue;
      const line = text.slice(0, m.index).split('\n').length;
      found.push({ pair: `${path.relative(SRC, file)} -> ${to}`, line: `src/${path.relative(SRC, file)}:${line} imports ${m[1]}` });
    }
  }
  return found;
}

t.test('every module of src/ has a layer', async (t) => {
  const unknown = [...new Set(tsFiles(SRC).map(layerOf))].filter((l) => RANK[l] === undefined);
  t.same(unknown, [], 'a new folder or root module gets a rank here');
});

t.test('imports point one way', async (t) => {
  const found = againstTheGrain();
  const unexpected = found.filter((f) => KNOWN[f.pair] === undefined);
  t.same(unexpected.map((f) => f.line), [], 'no import against the grain');
  const seen = new Set(found.map((f) => f.pair));
  for (const [pair, why] of Object.entries(KNOWN)) t.comment(seen.has(pair) ? `known, being removed: ${pair} (${why})` : `KNOWN entry no longer happens, drop it: ${pair}`);
});

t.test('server never imports bundle; lib imports only lib', async (t) => {
  const found = againstTheGrain().filter((f) => f.pair.startsWith('server/') ? f.pair.endsWith('-> bundle') : f.pair.startsWith('lib/'));
  t.same(found.map((f) => f.line), []);
});

t.test('the check sees an import against the grain', async (t) => {
  // the same pattern over a line as src/ writes them
  const line = "import { captureBundle } from '../../bundle/capture.js';";
  t.same([...line.matchAll(IMPORT)].map((m) => m[1]), ['../../bundle/capture.js']);
  t.same([..."const { x } = await import('../bundle/route.js');".matchAll(IMPORT)].map((m) => m[1]), ['../bundle/route.js']);
  t.same([..."export { a } from './a.js';\nimport './threadpool.js';".matchAll(IMPORT)].map((m) => m[1]), ['./a.js', './threadpool.js']);
});
