import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ConfigError, loadConfig, tlsEnabled } from '../src/config.js';
import { parseDuration } from '../src/format.js';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

t.test('defaults outside Kubernetes', async (t) => {
  const { config } = loadConfig([], { NODE_NAME: 'node-a' });
  t.same(config.listen, { host: '127.0.0.1', port: 7070 });
  t.equal(config.criTimeoutMs, 2000);
  t.equal(config.auth, 'none');
  t.equal(config.nodeName, 'node-a');
  t.equal(config.maxFollows, 8);
});

t.test('flags win over their environment twins', async (t) => {
  const env = { NODETRUTH_CRI_TIMEOUT: '5s', NODETRUTH_LISTEN: '127.0.0.1:9000', NODE_NAME: 'n' };
  t.equal(loadConfig([], env).config.criTimeoutMs, 5000);
  t.equal(loadConfig(['--cri-timeout', '750ms'], env).config.criTimeoutMs, 750);
  t.equal(loadConfig([], env).config.listen.port, 9000);
});

t.test('bad flags are refused with the reason', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--listen', '0.0.0.0:7070'], /--listen: refusing to listen on non-loopback 0\.0\.0\.0 without --auth kubernetes/],
    [['--listen', 'nonsense'], /--listen: expected host:port/],
    [['--listen', '127.0.0.1:99999'], /port 99999 out of range/],
    [['--cri-timeout', '0s'], /--cri-timeout: expected a duration/],
    [['--cri-timeout', '2'], /--cri-timeout/],
    [['--cri-endpoint', '/run/containerd.sock'], /--cri-endpoint: expected unix:\/\/\//],
    [['--auth', 'basic'], /--auth/],
    [['--host-root', 'relative/path'], /--host-root: must be an absolute path/],
    [['--node-name', 'Bad_Name'], /--node-name: must be a DNS-1123 subdomain/],
    [['--no-such-flag'], /Unknown option '--no-such-flag'/],
    [['--max-follows', '0'], /--max-follows/],
  ];
  for (const [argv, message] of bad) {
    t.throws(() => loadConfig(argv, { NODE_NAME: 'n' }), ConfigError, argv.join(' '));
    t.throws(() => loadConfig(argv, { NODE_NAME: 'n' }), { message }, argv.join(' '));
  }
  t.equal(loadConfig(['--listen', '0.0.0.0:7070', '--auth', 'kubernetes'], { NODE_NAME: 'n' }).config.auth, 'kubernetes', 'non-loopback is fine with auth');
  t.equal(loadConfig(['--listen', '[::1]:7070'], { NODE_NAME: 'n' }).config.listen.host, '::1');
});

t.test('durations', async (t) => {
  t.equal(parseDuration('2s'), 2000);
  t.equal(parseDuration('1m30s'), 90_000);
  t.equal(parseDuration('500ms'), 500);
  t.equal(parseDuration('1.5s'), 1500);
  t.equal(parseDuration('5'), null);
  t.equal(parseDuration('-1s'), null);
});

t.test('the CLI exits 2 on a bad flag, prints the version', async (t) => {
  const run = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', cli, ...args], { encoding: 'utf8', timeout: 30_000 });
  const bad = run(['serve', '--listen', '10.0.0.1:7070']);
  t.equal(bad.status, 2);
  t.match(bad.stderr, /^nodetruth: --listen: refusing to listen on non-loopback 10\.0\.0\.1 without --auth kubernetes/);
  const version = run(['version']);
  t.equal(version.status, 0);
  t.match(version.stdout, /^nodetruth \d+\.\d+\.\d+\n$/);
  const unknown = run(['frobnicate']);
  t.equal(unknown.status, 2);
  t.match(unknown.stderr, /unknown command "frobnicate"/);
});

t.test('request, follow and connection bounds: defaults, env twins and refusals', async (t) => {
  const { config } = loadConfig([], { NODE_NAME: 'n' });
  t.equal(config.requestTimeout, 35_000, 'a little above the journal deadline (30 s)');
  t.equal(config.followMax, 3_600_000);
  t.equal(config.maxFollowsPerClient, 4);
  t.equal(config.maxConnections, 256);
  t.same(config.allowedHosts, []);
  const env = { NODE_NAME: 'n', NODETRUTH_ALLOWED_HOSTS: 'Nodetruth.Local, [fd00::1]', NODETRUTH_FOLLOW_MAX: '30m', NODETRUTH_REQUEST_TIMEOUT: '1m' };
  const c = loadConfig([], env).config;
  t.same(c.allowedHosts, ['nodetruth.local', '[fd00::1]']);
  t.equal(c.followMax, 1_800_000);
  t.equal(c.requestTimeout, 60_000);
  for (const [argv, message] of [
    [['--allowed-hosts', 'evil.example:8080'], /--allowed-hosts: expected comma-separated host names without ports/],
    [['--allowed-hosts', '*'], /--allowed-hosts/],
    [['--request-timeout', '0s'], /--request-timeout: expected a duration between 1s and 10m/],
    [['--follow-max', '48h'], /--follow-max: expected a duration between 1s and 24h/],
    [['--max-follows-per-client', '0'], /--max-follows-per-client/],
    [['--max-connections', 'lots'], /--max-connections/],
  ] as const) {
    t.throws(() => loadConfig([...argv], { NODE_NAME: 'n' }), { message }, argv.join(' '));
  }
});

t.test('--listen with several addresses: each obeys the rules, a bad one is named', async (t) => {
  const n = { NODE_NAME: 'n' };
  const c = loadConfig(['--listen', '10.0.3.17:7070,127.0.0.1:7071', '--auth', 'kubernetes'], n).config;
  t.same(c.listen, { host: '10.0.3.17', port: 7070 }, 'listen: the first address');
  t.same(c.listenAddresses, [{ host: '10.0.3.17', port: 7070 }, { host: '127.0.0.1', port: 7071 }]);
  t.ok(tlsEnabled(c), 'TLS on every address when one is off loopback');
  t.ok(tlsEnabled(loadConfig(['--listen', '127.0.0.1:7071,10.0.3.17:7070', '--auth', 'kubernetes'], n).config), 'whichever comes first');
  t.notOk(tlsEnabled(loadConfig(['--listen', '127.0.0.1:7070,[::1]:7071'], n).config), 'loopback only: plain HTTP as before');
  t.same(loadConfig([], { ...n, NODETRUTH_LISTEN: '127.0.0.1:1,127.0.0.2:2' }).config.listenAddresses.length, 2, 'the env twin too');
  t.same(loadConfig(['--listen', '127.0.0.1:7070,127.0.0.2:7071,[::1]:7072'], n).config.allowedHosts, ['127.0.0.2', '[::1]'], "without auth, each further address's name passes the Host check");
  const bad: [string[], RegExp][] = [
    [['--listen', '127.0.0.1:7070,10.0.0.1:7071'], /^--listen: refusing to listen on non-loopback 10\.0\.0\.1 without --auth kubernetes$/],
    [['--listen', '10.0.0.1:7070,nonsense', '--auth', 'kubernetes'], /^--listen: address 2 "nonsense": expected host:port/],
    [['--listen', '127.0.0.1:7070,127.0.0.1:99999'], /^--listen: address 2 "127\.0\.0\.1:99999": port 99999 out of range$/],
    [['--listen', '127.0.0.1:7070,'], /^--listen: address 2 "": expected host:port/],
    [['--listen', '127.0.0.1:7070,127.0.0.1:7070'], /address 2 "127\.0\.0\.1:7070": port 7070 on 127\.0\.0\.1 is already listed/],
    [['--listen', '0.0.0.0:7070,127.0.0.1:7070', '--auth', 'kubernetes'], /address 2 .*port 7070 on 0\.0\.0\.0 is already listed \(a wildcard address covers every host\)/],
    [['--listen', '127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5'], /^--listen: at most 4 addresses, got 5$/],
    [['--listen', '127.0.0.1:7070,10.0.0.1:7071', '--auth', 'kubernetes', '--tls', 'off'], /^--tls: refusing to serve plain HTTP on non-loopback 10\.0\.0\.1/],
  ];
  for (const [argv, message] of bad) t.throws(() => loadConfig(argv, n), { name: 'ConfigError', message }, argv.join(' '));
});
