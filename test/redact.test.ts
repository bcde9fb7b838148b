import t from 'tap';
import { redactArgs, redactDeep, redactEnvEntry, redactMap, REDACTED } from '../src/redact.js';

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
