/**
 * The bundle commands read their flags with the shared parser (loadConfig's extra
 * flags) and their durations with the one grammar: `--since 1h30m` is a duration
 * like any other, a flag the command does not know is a usage error, and the
 * usage errors say which flag and what it takes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { givesFlag } from '../../src/args.js';
import { captureMain, serveBundleMain, triageBundleMain } from '../../src/bundle/cli.js';
import { ConfigError } from '../../src/config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-cli-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const existing = path.join(dir, 'exists.tar.gz');
writeFileSync(existing, 'x');
const source = ['--host-root', dir, '--kmsg-path', path.join(dir, 'no-kmsg'), '--journalctl', '/nonexistent', '--kubelet-healthz', 'http://127.0.0.1:1/healthz'];

t.test('capture --since takes the one duration grammar, bounded 1m..7d', async (t) => {
  // past the flags, the capture stops at -o: the file exists (a bundle is never overwritten)
  for (const since of ['1h30m', '90m', '7d', '1.5h']) await t.rejects(captureMain([...source, '--since', since, '-o', existing]), { name: 'ConfigError', message: /^-o: cannot create .*it exists/ }, since);
  await t.rejects(captureMain([...source, `--since=2d`, `--output=${existing}`]), { message: /^-o: cannot create/ }, '--flag=value forms');
  for (const since of ['30s', '8d', '1w', '']) await t.rejects(captureMain([...source, '--since', since, '-o', existing]), { name: 'ConfigError', message: /^--since: expected a duration from 1m to 7d/ }, JSON.stringify(since));
  await t.rejects(captureMain([...source, '--since']), ConfigError, 'a flag without its value');
  await t.rejects(captureMain([...source, '--sinse', '1h']), { name: 'ConfigError', message: /sinse/ }, 'an unknown flag');
  await t.rejects(captureMain([...source, '--max-size', '1KiB', '-o', existing]), { message: /^--max-size: expected a size of at least 1MiB/ });
});

t.test('serve --bundle and triage --bundle: their flags, and only theirs', async (t) => {
  await t.rejects(serveBundleMain([...source, '--bundle', path.join(dir, 'none.tar.gz'), '--max-size', 'lots']), { name: 'ConfigError', message: /^--max-size: expected a size/ });
  await t.rejects(serveBundleMain([...source, '--bundle']), ConfigError);
  let err = '';
  const io = { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) }, env: {} };
  t.equal(await triageBundleMain(['--bundle', existing, '--listen', '127.0.0.1:0'], io), 3, 'a source flag does not apply to a bundle');
  t.match(err, /only --json and --max-size apply/);
  err = '';
  t.equal(await triageBundleMain(['--bundle', existing, 'extra'], io), 3);
  t.match(err, /only --json and --max-size apply, got extra/);
});

t.test('givesFlag reads argv as the parser does', async (t) => {
  t.ok(givesFlag(['--listen', '127.0.0.1:0', '--bundle', 'f'], 'bundle'));
  t.ok(givesFlag(['--bundle=f'], 'bundle'));
  t.notOk(givesFlag(['--bundles', 'f'], 'bundle'));
  t.notOk(givesFlag(['--', '--bundle'], 'bundle'), 'after -- it is an argument');
});
