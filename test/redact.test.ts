import { readFileSync } from 'node:fs';
import t from 'tap';
import {
  MAX_DEPTH,
  MAX_JSON_PARSE,
  MAX_JSON_TEXT,
  MAX_VALUES,
  redactArgs,
  redactDeep,
  redactEnvEntry,
  redactLogText,
  redactMap,
  redactText,
  REDACTED,
} from '../src/redact.js';
import { parseInfo } from '../src/readers/cri/normalize.js';
import { CONFLIST_SOURCE, containerd21Info } from './fixtures/cri/containerd-2.1-status.js';

/** A string value holding a JSON document, through the deep redaction every runtime document takes (a string in, a string out). */
const redactJsonText = (v: string): string => redactDeep(v) as string;

t.test('env entries keep names only', async (t) => {
  t.equal(redactEnvEntry('PATH=/usr/bin'), `PATH=${REDACTED}`);
  t.equal(redactEnvEntry('EMPTY='), `EMPTY=${REDACTED}`);
  t.equal(redactEnvEntry('NOVALUE'), 'NOVALUE');
  t.equal(redactEnvEntry('A=b=c'), `A=${REDACTED}`, 'only the first = splits');
});

t.test('secret-looking arguments lose their values', async (t) => {
  t.same(redactArgs(['--password=x', '--db-token', 'y', '--verbose', 'z', '-p', 'q']), [`--password=${REDACTED}`, '--db-token', REDACTED, '--verbose', 'z', '-p', 'q']);
  t.same(redactArgs(['--client-secret=a=b']), [`--client-secret=${REDACTED}`]);
  t.same(redactArgs(['--tokenfile']), ['--tokenfile'], 'a trailing flag has nothing after it');
});

t.test('maps redact by key', async (t) => {
  t.same(redactMap({ 'app.kubernetes.io/name': 'web', 'example.com/api-key': 'k', Authorization: 'Bearer x' }), {
    'app.kubernetes.io/name': 'web',
    'example.com/api-key': REDACTED,
    Authorization: REDACTED,
  });
  const input = { 'app.kubernetes.io/name': 'web', 'example.com/api-key': 'k' };
  const out = redactMap(input);
  t.not(out, input, 'a map with a secret is copied');
  t.same(input, { 'app.kubernetes.io/name': 'web', 'example.com/api-key': 'k' }, 'and left as it was');
  t.same(Object.keys(out), ['app.kubernetes.io/name', 'example.com/api-key'], 'in its order');
  const clean = { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'shop' };
  t.equal(redactMap(clean), clean, 'a map with nothing to redact is the input itself');
});

t.test('deep redaction of a containerd verbose info document', async (t) => {
  const doc = {
    pid: 4242,
    config: { envs: [{ key: 'DB_PASSWORD', value: 'p' }, { key: 'LANG', value: 'C' }], args: ['--token=t'] },
    runtimeSpec: { process: { env: ['A=1', 'SECRET=2'], args: ['sh', '--password', 'x'] }, annotations: { 'x/secret': 's', 'x/plain': 'p' } },
  };
  const copy = structuredClone(doc);
  t.same(redactDeep(doc), {
    pid: 4242,
    config: { envs: [{ key: 'DB_PASSWORD', value: REDACTED }, { key: 'LANG', value: REDACTED }], args: [`--token=${REDACTED}`] },
    runtimeSpec: { process: { env: [`A=${REDACTED}`, `SECRET=${REDACTED}`], args: ['sh', '--password', REDACTED] }, annotations: { 'x/secret': REDACTED, 'x/plain': 'p' } },
  });
  t.same(doc, copy, 'the input is not mutated');
});

t.test('a JSON document in an annotation is redacted as a document (kubectl last-applied-configuration)', async (t) => {
  const applied = JSON.stringify({
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { containers: [{ name: 'c', env: [{ name: 'DB_PASSWORD', value: 'hunter2' }, { name: 'MODE', value: 'prod' }], args: ['--token=t'] }] },
  });
  const out = redactMap({ 'kubectl.kubernetes.io/last-applied-configuration': applied, plain: '{not json', list: '[1,2]' });
  const doc = JSON.parse(out['kubectl.kubernetes.io/last-applied-configuration']!);
  t.same(doc.spec.containers[0].env, [{ name: 'DB_PASSWORD', value: REDACTED }, { name: 'MODE', value: REDACTED }]);
  t.same(doc.spec.containers[0].args, [`--token=${REDACTED}`]);
  t.notMatch(out['kubectl.kubernetes.io/last-applied-configuration']!, /hunter2|prod/);
  t.equal(out.plain, '{not json', 'text that is not JSON is left alone');
  t.equal(out.list, '[1,2]');
  t.same(redactDeep({ annotations: { a: applied } }), { annotations: { a: out['kubectl.kubernetes.io/last-applied-configuration'] } }, 'also inside deep documents');
});

// --- the walk is bounded in depth and size ---

const deepArray = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObject = (n: number, leaf = '1') => `${'{"a":'.repeat(n)}${leaf}${'}'.repeat(n)}`;
/** Nesting depth of a value, without recursion (the value may be the hostile one). */
function depthOf(v: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    max = Math.max(max, d + 1);
    for (const c of Object.values(x)) stack.push([c, d + 1]);
  }
  return max;
}

t.test('a 2,000-deep annotation (4 KB, any pod author can set it) is bounded, not a RangeError', async (t) => {
  for (const [shape, text] of [
    ['arrays', deepArray(2000)],
    ['objects', deepObject(2000)],
    ['objects holding env at the bottom', deepObject(2000, '{"env":[{"name":"DB_PASSWORD","value":"FAKEDEEPSECRET"}]}')],
  ] as const) {
    const out = redactMap({ 'example.com/deep': text, plain: 'web' });
    t.equal(out.plain, 'web', `${shape}: the rest of the map stands`);
    const doc = JSON.parse(out['example.com/deep']!);
    t.ok(depthOf(doc) <= MAX_DEPTH, `${shape}: nothing deeper than ${MAX_DEPTH} remains (${depthOf(doc)})`);
    t.match(out['example.com/deep'], `<redacted: nested deeper than ${MAX_DEPTH}>`, `${shape}: the marker says why`);
    t.notMatch(out['example.com/deep'], /FAKEDEEPSECRET/, `${shape}: the cut-off part is not passed through`);
  }
  // the same document inside containerd 1.6's verbose ContainerStatus info (config.annotations, runtimeSpec.annotations)
  const info = {
    info: { sandboxID: 'a1', pid: 7, config: { annotations: { 'example.com/deep': deepArray(2000) } }, runtimeSpec: { annotations: { 'example.com/deep': deepObject(2000) } } },
  };
  const red = redactDeep(info) as { info: { config: { annotations: Record<string, string> }; runtimeSpec: { annotations: Record<string, string> } } };
  t.match(red.info.config.annotations['example.com/deep'], 'nested deeper than');
  t.match(red.info.runtimeSpec.annotations['example.com/deep'], 'nested deeper than');
  t.doesNotThrow(() => JSON.stringify(red), 'the redacted document serializes');
  // a deep value handed over already parsed (parseInfo parses verbose info; V8's JSON.parse is iterative)
  const parsed = redactDeep({ info: JSON.parse(deepObject(5000)) });
  t.ok(depthOf(parsed) <= MAX_DEPTH + 1);
  t.doesNotThrow(() => JSON.stringify(parsed));
  t.equal(redactJsonText(deepArray(40)), deepArray(40), 'a document within the bound is kept as it was');
});

t.test('the walk is bounded in size: past MAX_VALUES the rest is a marker, never the values', async (t) => {
  const big = { env: Array.from({ length: MAX_VALUES + 10 }, (_, i) => `V${i}=x`), tail: { token: 'FAKEOVERSECRET', list: ['FAKEOVERSECRET'] } };
  const out = redactDeep(big) as { env: string[]; tail: unknown };
  t.ok(out.env.length <= MAX_VALUES + 1);
  t.equal(out.env.at(-1), `<redacted: more than ${MAX_VALUES} values>`);
  t.notMatch(JSON.stringify(out), /FAKEOVERSECRET|=x/);
  const wide = Object.fromEntries(Array.from({ length: MAX_VALUES + 10 }, (_, i) => [`k${i}`, `https://u:FAKEWIDE@h/${i}`]));
  const w = redactDeep(wide) as Record<string, string>;
  t.ok(Object.keys(w).length <= MAX_VALUES + 1);
  t.equal(w[REDACTED], `<redacted: more than ${MAX_VALUES} values>`);
  t.notMatch(JSON.stringify(w), /FAKEWIDE/);
});

t.test('JSON texts too big to parse are redacted whole, with a marker saying why', async (t) => {
  const env = { spec: { containers: [{ env: [{ name: 'A', value: 'FAKEBIGSECRET' }] }] } };
  const huge = JSON.stringify({ ...env, pad: 'x'.repeat(MAX_JSON_TEXT) });
  const out = redactMap({ 'kubectl.kubernetes.io/last-applied-configuration': huge });
  t.equal(out['kubectl.kubernetes.io/last-applied-configuration'], `<redacted: JSON text of ${huge.length} characters, over the ${MAX_JSON_TEXT}-character parse bound>`);
  // the whole call has a parse budget: many texts just under the bound, the later ones go whole
  const each = JSON.stringify({ ...env, pad: 'y'.repeat(MAX_JSON_TEXT - 200) });
  const many = redactMap(Object.fromEntries(Array.from({ length: Math.ceil(MAX_JSON_PARSE / each.length) + 2 }, (_, i) => [`a${i}`, each])));
  const values = Object.values(many);
  t.ok(JSON.parse(values[0]!).spec, 'the first ones are parsed and redacted');
  t.match(values.at(-1), /parse budget/);
  t.notMatch(values.join(''), /FAKEBIGSECRET/);
});

// --- the real shapes of containerd's verbose info ---

const fixture = JSON.parse(readFileSync(new URL('./fixtures/cri/v1-status-verbose.json', import.meta.url), 'utf8')) as { info: Record<string, string> };

t.test('containerd 1.6 Status info: nothing to redact, so every original text is kept (CNI config sources)', async (t) => {
  const parsed = parseInfo(fixture.info);
  const out = redactDeep(parsed) as typeof parsed;
  t.same(out, parsed, 'nothing changed');
  const net = (out.cniconfig as { Networks: { Config: { Source: string; Plugins: { Source: string }[] } }[] }).Networks[0]!.Config;
  const orig = JSON.parse(fixture.info.cniconfig!).Networks[0].Config;
  t.equal(net.Source, orig.Source, 'the conflist source keeps its own text (newlines, key order), not a re-serialization');
  t.equal(net.Plugins[0]!.Source, orig.Plugins[0].Source);
  t.equal(redactJsonText(orig.Source), orig.Source);
});

t.test('containerd 2.1 Status info (built from its source): every original text is kept, and the same object comes back', async (t) => {
  const info = containerd21Info();
  const parsed = parseInfo(info);
  t.equal(redactDeep(parsed), parsed, 'nothing to redact: the input itself, not a copy');
  const nets = (parsed.cniconfig as { Networks: { Config: { Source: string; Plugins: { Source: string }[] } }[] }).Networks;
  t.equal(nets[1]!.Config.Source, CONFLIST_SOURCE);
  for (const n of nets) {
    t.equal(redactJsonText(n.Config.Source), n.Config.Source, 'a conflist text: unchanged, byte for byte');
    for (const p of n.Config.Plugins) t.equal(redactJsonText(p.Source), p.Source);
  }
  t.equal(parsed.lastCNILoadStatus, 'OK', 'a value that is not JSON stays its text');
});

t.test('registry headers, auths and configs (containerd config) are redacted whatever their type', async (t) => {
  const config = JSON.parse(fixture.info.config!);
  // as containerd 1.6 reports a configured [plugins."io.containerd.grpc.v1.cri".registry]
  config.registry = {
    configPath: '',
    mirrors: { 'docker.io': { endpoint: ['https://mirror:FAKEMIRRORPW@mirror.example.com'] } },
    configs: { 'reg.example.com': { auth: { username: 'u', password: 'FAKEREGPW', auth: 'FAKEREGAUTH', identitytoken: 'FAKEIDTOKEN' }, tls: null } },
    auths: { 'reg.example.com': { auth: 'FAKEAUTHS' } },
    headers: { Authorization: ['Basic FAKEHEADER'], 'X-Meta': ['kept'] },
  };
  // containerd 2.x moved registry to the images plugin; the same maps, keyed the same
  const v2 = { imageConfig: { registry: { configPath: '/etc/containerd/certs.d', headers: { Authorization: ['Bearer FAKEV2HEADER'], 'X-Api-Key': ['FAKEV2KEY'] } } } };
  const out = redactDeep({ ...parseInfo({ ...fixture.info, config: JSON.stringify(config) }), v2 }) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const reg = out.config.registry;
  t.same(reg.headers, { Authorization: REDACTED, 'X-Meta': ['kept'] }, 'a string array under Authorization goes whole');
  t.equal(reg.auths, REDACTED, 'an object under a secret-looking key goes whole');
  t.same(reg.configs['reg.example.com'], { auth: REDACTED, tls: null });
  t.same(reg.mirrors['docker.io'].endpoint, [`https://mirror:${REDACTED}@mirror.example.com`], 'URL userinfo');
  t.same(out.v2.imageConfig.registry.headers, { Authorization: REDACTED, 'X-Api-Key': REDACTED });
  t.notMatch(JSON.stringify(out), /FAKE/);
  t.equal(out.config.containerd.snapshotter, 'overlayfs', 'the rest of the config stands');
  t.same(redactDeep({ token: 1234, auth: false, secret: null, password: { a: 1 } }), { token: REDACTED, auth: false, secret: null, password: REDACTED }, 'numbers and objects go; null and booleans hold nothing');
});

// --- secrets by shape in arguments, headers and scripts ---

t.test('mysql -pSECRET, curl headers and -u, positional NAME=value', async (t) => {
  t.same(redactArgs(['mysql', '-uroot', '-pFAKEMY', 'shop']), ['mysql', '-uroot', `-p${REDACTED}`, 'shop'], 'the attached password goes, the database stays');
  t.same(redactArgs(['mysql', '-p', 'shop']), ['mysql', '-p', 'shop'], 'a bare -p prompts: the next argument is the database');
  t.same(redactArgs(['mysqldump', '-pa=b', '-p=x']), ['mysqldump', `-p${REDACTED}`, `-p${REDACTED}`]);
  t.same(redactArgs(['app', '-password', 'FAKEGO']), ['app', `-p${REDACTED}`, REDACTED], "Go's single-dash -password x");
  t.same(
    redactArgs(['curl', '-H', 'Authorization: Bearer FAKEBEARER', '-H', 'Accept: application/json', '--header', 'Cookie: sid=FAKECOOKIE', '-H', 'X-Api-Key: FAKEAPIKEY', 'https://api.example.com/']),
    ['curl', '-H', `Authorization: ${REDACTED}`, '-H', 'Accept: application/json', '--header', `Cookie: ${REDACTED}`, '-H', `X-Api-Key: ${REDACTED}`, 'https://api.example.com/'],
  );
  t.same(redactArgs(['curl', '-HAuthorization: Bearer FAKE1', '--header=Authorization: Basic FAKE2', '--proxy-header=Proxy-Authorization:FAKE3']), [
    'curl',
    `-HAuthorization: ${REDACTED}`,
    `--header=Authorization: ${REDACTED}`,
    `--proxy-header=Proxy-Authorization:${REDACTED}`,
  ]);
  t.same(redactArgs(['curl', '-H', 'Authorization:', 'Bearer', 'FAKESPLIT']), ['curl', '-H', 'Authorization:', 'Bearer', REDACTED], 'a header a shell split into words');
  t.same(redactArgs(['http', 'GET', 'api.example.com', 'Authorization:Bearer FAKEHTTPIE']), ['http', 'GET', 'api.example.com', `Authorization:${REDACTED}`], 'httpie');
  t.same(redactArgs(['curl', '-u', 'alice:FAKEUSERPW', '--user=bob:FAKE2', 'docker', '-u', '1000:1000']), ['curl', '-u', `alice:${REDACTED}`, `--user=bob:${REDACTED}`, 'docker', '-u', '1000:1000']);
  t.same(redactArgs(['env', 'PASSWORD=FAKEPOS', 'DB_TOKEN=t', 'MODE=prod', 'db.password=x', '/app']), ['env', `PASSWORD=${REDACTED}`, `DB_TOKEN=${REDACTED}`, 'MODE=prod', `db.password=${REDACTED}`, '/app']);
  t.same(redactArgs(['dd', 'if=/dev/zero', 'of=/tmp/x']), ['dd', 'if=/dev/zero', 'of=/tmp/x'], 'other NAME=value arguments stay');
  t.same(redactArgs(['--session-timeout', '30', '--auth-token', 'FAKE']), ['--session-timeout', '30', '--auth-token', REDACTED], 'flags keep their narrower list');
});

t.test('a shell script passed as one argument: its words are arguments too', async (t) => {
  const [, , script] = redactArgs(['sh', '-c', 'mysql -uroot -pFAKESH shop && curl -sf -H "Authorization: Bearer FAKESHB" https://u:FAKESHU@h/ ; export API_KEY=FAKESHK; exec app --port 80']);
  t.notMatch(script!, /FAKE/);
  t.match(script!, /^mysql -uroot -p<redacted> shop && curl -sf -H "Authorization: Bearer <redacted> https:\/\/u:<redacted>@h\/ ; export API_KEY=<redacted> exec app --port 80$/);
  t.equal(redactArgs(['sh', '-c', 'echo  hello   world'])[2], 'echo  hello   world', 'nothing to redact: the text is kept as it was');
});

t.test('URL userinfo, secret query parameters and bearer tokens in any string', async (t) => {
  t.equal(redactText('postgres://app:FAKEPG@db:5432/shop'), `postgres://app:${REDACTED}@db:5432/shop`);
  t.equal(redactText('see https://ghp_FAKEGH@github.com/org/repo.git'), `see https://${REDACTED}@github.com/org/repo.git`, 'a token as the user');
  t.equal(redactText('amqp://u:p@ss:FAKE@rabbit/'), `amqp://u:${REDACTED}@rabbit/`, 'an unencoded @ in the password: up to the last @');
  t.equal(redactText('https://h/x?a=1&access_token=FAKEQ&X-Amz-Signature=FAKES#f'), `https://h/x?a=1&access_token=${REDACTED}&X-Amz-Signature=${REDACTED}#f`);
  t.equal(redactText('Authorization: Bearer FAKEB.tok'), `Authorization: Bearer ${REDACTED}`);
  t.equal(redactText('ssh://git@github.com:org/x and user@example.com'), `ssh://${REDACTED}@github.com:org/x and user@example.com`);
  t.equal(redactText('plain text, a=b'), 'plain text, a=b');
  t.same(redactMap({ 'example.com/upstream': 'https://svc:FAKEANN@upstream.example.com/' }), { 'example.com/upstream': `https://svc:${REDACTED}@upstream.example.com/` }, 'annotation text');
  t.same(redactDeep({ runtimeSpec: { process: { env: ['A=1'], args: ['git', 'clone', 'https://x:FAKEARG@h/r'] } }, note: 'redis://:FAKEREDIS@cache:6379' }), {
    runtimeSpec: { process: { env: [`A=${REDACTED}`], args: ['git', 'clone', `https://x:${REDACTED}@h/r`] } },
    note: `redis://:${REDACTED}@cache:6379`,
  });
  const applied = JSON.stringify({ spec: { containers: [{ args: ['-pFAKEJ'], env: { A: 'FAKEENVMAP' } }], url: 'https://u:FAKEJU@h' } });
  t.notMatch(redactJsonText(applied), /FAKE/, 'inside JSON documents too (args, env as a map, URLs)');
});

t.test('a __proto__ key in a document stays a plain key', async (t) => {
  const out = redactJsonText('{"__proto__":{"token":"FAKEPROTO"},"a":"https://u:FAKE@h"}');
  t.notMatch(out, /FAKE/);
  t.same(JSON.parse(out), JSON.parse(`{"__proto__":{"token":"${REDACTED}"},"a":"https://u:${REDACTED}@h"}`));
  t.equal(Object.getPrototypeOf(JSON.parse(out)), Object.prototype);
});

t.test('every rule is linear on a hostile 1 MiB argument (correctness asserted; the time is printed)', async (t) => {
  const MiB = 1024 * 1024;
  const hostile: [string, string][] = [
    ['--aaaa…', `--${'a'.repeat(MiB)}`],
    ['--tokentoken… ', `--${'token'.repeat(MiB / 5)} `],
    ['-Hauth…', `-H${'auth'.repeat(MiB / 4)}`],
    ['a.a.a…://', `${'a.'.repeat(MiB / 2)}://`],
    ['://:://…', '://a'.repeat(MiB / 4)],
    ['://aaa…(no @)', `://${'a'.repeat(MiB)}`],
    ['&a&a…=', `${'&a'.repeat(MiB / 2)}=`],
    ['?aaa…', `?${'a'.repeat(MiB)}`],
    ['bearer + spaces', `bearer${' '.repeat(MiB)}`],
    ['bearer bearer…', 'bearer '.repeat(MiB / 7)],
    ['PASSWORD=…', `PASSWORD=${'x'.repeat(MiB)}`],
    ['words', 'a '.repeat(MiB / 2)],
    ['{{{…', '{'.repeat(MiB)],
  ];
  const times: string[] = [];
  for (const [name, arg] of hostile) {
    const t0 = performance.now();
    const out = redactArgs(['sh', arg]);
    const text = redactText(arg);
    const json = redactJsonText(arg);
    times.push(`${name} ${(performance.now() - t0).toFixed(1)} ms`);
    t.equal(out.length, 2, name);
    t.ok(typeof text === 'string' && typeof json === 'string', name);
  }
  t.same(redactArgs([`PASSWORD=${'x'.repeat(MiB)}`]), [`PASSWORD=${REDACTED}`]);
  t.equal(redactArgs([`--${'token'.repeat(MiB / 5)}=v`])[0], `--${'token'.repeat(MiB / 5)}=${REDACTED}`);
  t.comment(`redactArgs + redactText + redactJsonText per 1 MiB input: ${times.join(', ')}`);
});

// --- the shapes a review found missing: tools, flags, DSNs, headers in text, YAML ---

t.test('tools whose secret follows a short flag or a word', async (t) => {
  t.same(redactArgs(['redis-cli', '-h', 'cache', '-a', 'FAKEREDIS', 'ping']), ['redis-cli', '-h', 'cache', '-a', REDACTED, 'ping'], 'redis-cli -a');
  t.same(redactArgs(['/usr/bin/sshpass', '-p', 'FAKESSHPASS', 'ssh', 'root@h']), ['/usr/bin/sshpass', '-p', REDACTED, 'ssh', 'root@h'], 'sshpass -p');
  t.same(redactArgs(['docker', 'login', '-u', 'ci', '-p', 'FAKEDOCKER', 'reg.example.com']), ['docker', 'login', '-u', 'ci', '-p', REDACTED, 'reg.example.com'], 'docker login -p');
  t.same(redactArgs(['vault', 'login', 'FAKEVAULT']), ['vault', 'login', REDACTED], 'vault login TOKEN');
  t.same(redactArgs(['vault', 'login', '-method=userpass', 'username=ops', 'password=FAKEVP']), ['vault', 'login', '-method=userpass', 'username=ops', `password=${REDACTED}`]);
  // the same words elsewhere mean no secret
  t.same(redactArgs(['docker', 'run', '-p', '8080:80', 'nginx']), ['docker', 'run', '-p', '8080:80', 'nginx'], 'docker run -p is a port');
  t.same(redactArgs(['ls', '-a', '/tmp']), ['ls', '-a', '/tmp'], 'ls -a');
  t.same(redactArgs(['vault', 'status']), ['vault', 'status']);
  // inside a script, and a separator ends the tool
  const [, , script] = redactArgs(['sh', '-c', 'redis-cli -a FAKERS1 ping && sshpass -p FAKERS2 ssh h; docker login -p FAKERS3 r && vault login FAKERS4 && ls -a x']);
  t.equal(script, `redis-cli -a ${REDACTED} ping && sshpass -p ${REDACTED} ssh h; docker login -p ${REDACTED} r && vault login ${REDACTED} && ls -a x`);
  t.same(redactDeep({ args: ['redis-cli', '-a', 'FAKEDOC'] }), { args: ['redis-cli', '-a', REDACTED] }, 'an args list in a document');
});

t.test('flags named for signing keys, JWTs, credentials and kubeconfig data', async (t) => {
  t.same(redactArgs(['app', '--signing-key', 'FAKESK', '--jwt=FAKEJWT', '--cred=FAKECRED', '--kubeconfig-data=FAKEKCD', '--aws-creds', 'FAKEAWS']), [
    'app', '--signing-key', REDACTED, `--jwt=${REDACTED}`, `--cred=${REDACTED}`, `--kubeconfig-data=${REDACTED}`, '--aws-creds', REDACTED,
  ]);
  t.same(redactArgs(['app', '--jwt-issuer', 'https://issuer', '--incredible', 'yes']), ['app', '--jwt-issuer', 'https://issuer', '--incredible', 'yes'], 'names that only contain the words');
});

t.test("Go's DSN, headers and YAML lines in text", async (t) => {
  t.equal(redactText('dsn=app:FAKEDSN@tcp(db:3306)/shop?parseTime=true'), `dsn=app:${REDACTED}@tcp(db:3306)/shop?parseTime=true`);
  t.equal(redactText('root:FAKE@unix(/run/mysqld.sock)/x'), `root:${REDACTED}@unix(/run/mysqld.sock)/x`);
  t.equal(redactText('u:p@ss:FAKEAT@tcp(h)/'), `u:${REDACTED}@tcp(h)/`, "an @ in the password: up to the DSN's @");
  t.equal(redactText('curl -H "Authorization: Basic ZmFrZTpGQUtF" https://h/'), `curl -H "Authorization: Basic ${REDACTED}" https://h/`);
  t.equal(redactText('X-Api-Key: FAKEXAK'), `X-Api-Key: ${REDACTED}`);
  t.equal(redactText('{"headers":{"x-api-key":"FAKEJSONKEY"'), `{"headers":{"x-api-key":"${REDACTED}"`, 'a JSON header that did not parse');
  const yaml = 'db:\n  host: pg\n  password: FAKEYAML\n  user: app\nstripe:\n  - api_key: "FAKEYAML2"\r\nauth:\n  enabled: true\n';
  t.equal(redactText(yaml), `db:\n  host: pg\n  password: ${REDACTED}\n  user: app\nstripe:\n  - api_key: ${REDACTED}\r\nauth:\n  enabled: true\n`);
  t.same(redactMap({ 'example.com/config': yaml }), { 'example.com/config': redactText(yaml) }, 'a YAML annotation');
  for (const s of [yaml, 'dsn=app:FAKE@tcp(db)/', 'Authorization: Basic FAKE', 'X-Api-Key: FAKE']) t.equal(redactText(redactText(s)), redactText(s), `idempotent: ${JSON.stringify(s).slice(0, 30)}`);
});

t.test('free text (journal, container logs): the shapes that are secrets by their form, nothing else', async (t) => {
  const cases: [string, string][] = [
    ['GET /v1/x Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.FAKE.sig', `GET /v1/x Authorization: Bearer ${REDACTED}`],
    ['proxy sent Proxy-Authorization: Basic dXNlcjpGQUtF', `proxy sent Proxy-Authorization: Basic ${REDACTED}`],
    ['GET https://api.example.com/v1/items?token=FAKEQT&limit=5 200', `GET https://api.example.com/v1/items?token=${REDACTED}&limit=5 200`],
    ['connecting to postgres://app:FAKEPG@db:5432/shop', `connecting to postgres://app:${REDACTED}@db:5432/shop`],
    ['config: password=FAKEPW user=app', `config: password=${REDACTED} user=app`],
    ['level=info DB_PASSWORD="FAKE PW" ok', `level=info DB_PASSWORD="${REDACTED}" ok`],
    ['{"level":"debug","access_token":"FAKEAT\\"x","n":1}', `{"level":"debug","access_token":"${REDACTED}","n":1}`],
    ["{'api_key': 'FAKEPY'}", `{'api_key': '${REDACTED}'}`],
    ['run --token=FAKEFLAG --v=2', `run --token=${REDACTED} --v=2`],
    ['key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIFAKE\n-----END RSA PRIVATE KEY-----\ndone', `key:\n-----BEGIN RSA PRIVATE KEY-----${REDACTED}-----END RSA PRIVATE KEY-----\ndone`],
    ['-----BEGIN PRIVATE KEY-----\nMIIcut', `-----BEGIN PRIVATE KEY-----${REDACTED}`],
    ['dial app:FAKEDSN@tcp(10.0.0.5:3306)', `dial app:${REDACTED}@tcp(10.0.0.5:3306)`],
    ['X-Api-Key: FAKEK', `X-Api-Key: ${REDACTED}`],
  ];
  for (const [input, want] of cases) t.equal(redactLogText(input), want, input.slice(0, 40));
  // normal lines stay exactly as they were
  for (const line of [
    'I0101 12:00:00.000000     702 kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/lab" secret="default/db-creds"',
    'E0101 12:00:01.000000     702 secret.go:194] Couldn\'t get secret default/db-creds: secret "db-creds" not found',
    'time="2025-01-01T00:00:00Z" level=info msg="loading plugin" id=io.containerd.grpc.v1.cri type=io.containerd.grpc.v1',
    'refreshing bearer token for service account default/app',
    'error: token expired; password: rejected',
    'max_tokens=512 tokens=30 session=3 auth=ok',
    '10.0.0.1 - - "GET /healthz HTTP/1.1" 200 2 user@example.com',
    'BEGIN PUBLIC KEY and -----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
  ]) t.equal(redactLogText(line), line, line.slice(0, 50));
  for (const [input] of cases) t.equal(redactLogText(redactLogText(input)), redactLogText(input), 'idempotent');
});

t.test('the new rules are linear on hostile 1 MiB texts (correctness asserted; the time is printed)', async (t) => {
  const MiB = 1024 * 1024;
  const hostile: [string, string][] = [
    ['a=a=…', 'a='.repeat(MiB / 2)],
    ['"a":"…', '"a":"'.repeat(MiB / 5)],
    ['token="…', 'token="'.repeat(MiB / 7)],
    ['a:b@tcp(…', 'a:b@tcp('.repeat(MiB / 8)],
    ['aaa…@tcp(', `${'a'.repeat(MiB)}@tcp(`],
    ['NL  password: x…', '\n  password: x'.repeat(MiB / 15)],
    ['password' + ' '.repeat(8) + '…', `password${' '.repeat(MiB)}`],
    ['authorization:…', 'authorization: '.repeat(MiB / 15)],
    ['-----BEGIN …', '-----BEGIN '.repeat(MiB / 11)],
    ['a-a-a…', 'a-'.repeat(MiB / 2)],
    ['redis-cli -a…', 'redis-cli -a '.repeat(MiB / 13)],
  ];
  const times: string[] = [];
  for (const [name, s] of hostile) {
    const t0 = performance.now();
    const a = redactLogText(s);
    const b = redactText(s);
    const c = redactArgs(['sh', '-c', s]);
    times.push(`${name} ${(performance.now() - t0).toFixed(1)} ms`);
    t.ok(typeof a === 'string' && typeof b === 'string' && c.length === 3, name);
  }
  t.comment(`redactLogText + redactText + redactArgs per 1 MiB input: ${times.join(', ')}`);
});
