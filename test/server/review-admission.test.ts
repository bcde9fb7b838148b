/**
 * The review budget per source address and in total (src/server/plugins/review-admission.ts):
 * whose budget an address spends, that an empty address bucket never spends the global one,
 * and that the map of addresses stays bounded under a flood from many addresses.
 */
import t from 'tap';
import { ReviewAdmission, sourceKey } from '../../src/server/plugins/review-admission.js';

t.test('budget keys: IPv4 as is, IPv4-mapped IPv6 as its IPv4, IPv6 by its /64', async (t) => {
  t.equal(sourceKey('10.2.0.1'), '10.2.0.1');
  t.equal(sourceKey('::ffff:10.2.0.1'), '10.2.0.1');
  t.equal(sourceKey('::FFFF:127.0.0.1'), '127.0.0.1');
  t.equal(sourceKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  t.equal(sourceKey('2001:0db8:0001:0002:ffff:0:0:9'), '2001:db8:1:2::/64', 'one /64 however it is written');
  t.equal(sourceKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(sourceKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'the zone is not part of the key');
  t.equal(sourceKey('::1'), '0:0:0:0::/64');
  t.equal(sourceKey('::'), '0:0:0:0::/64');
  t.equal(sourceKey('64:ff9b::10.0.0.1'), '64:ff9b:0:0::/64');
  t.equal(sourceKey(undefined), 'unknown');
  t.equal(sourceKey(''), 'unknown');
  t.equal(sourceKey('x'.repeat(100)), 'unknown', 'no unbounded key');
});

t.test('an address past its budget is refused without spending the global one', async (t) => {
  const a = new ReviewAdmission({ globalPerSecond: 10, globalBurst: 20, perAddressPerSecond: 2, perAddressBurst: 8, maxAddresses: 100 }, () => 0);
  const flood = Array.from({ length: 1000 }, () => a.admit('10.0.0.1'));
  t.equal(flood.filter((x) => x.ok).length, 8, "the flooding address gets its burst");
  t.match(flood.at(-1), { ok: false, scope: 'address', retryAfterMs: 500 });
  const others = Array.from({ length: 12 }, (_, i) => a.admit(`10.0.1.${i}`));
  t.ok(
    others.every((x) => x.ok),
    'the 12 left of the global burst go to other addresses',
  );
  t.match(a.admit('10.0.2.1'), { ok: false, scope: 'global', retryAfterMs: 100 });
  t.equal(a.addresses, 14);
});

t.test('a refusal by the global bucket does not spend the address bucket', async (t) => {
  let now = 0;
  const a = new ReviewAdmission({ globalPerSecond: 1, globalBurst: 1, perAddressPerSecond: 1, perAddressBurst: 2, maxAddresses: 100 }, () => now);
  t.equal(a.admit('10.0.0.2').ok, true);
  t.match(a.admit('10.0.0.1'), { ok: false, scope: 'global' });
  now += 1000;
  t.equal(a.admit('10.0.0.1').ok, true, "its own burst is intact");
  now += 1000;
  t.equal(a.admit('10.0.0.1').ok, true);
});

t.test('the address map is bounded; the least recently seen goes first', async (t) => {
  const a = new ReviewAdmission({ globalPerSecond: 1e9, globalBurst: 1e9, perAddressPerSecond: 1, perAddressBurst: 1, maxAddresses: 64 }, () => 0);
  t.equal(a.admit('10.9.9.9').ok, true);
  t.equal(a.admit('10.9.9.9').ok, false, 'spent');
  for (let i = 0; i < 10_000; i++) {
    a.admit(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    if (i % 32 === 0) a.admit('10.9.9.9'); // kept in use: never the least recently seen
  }
  t.equal(a.addresses, 64);
  t.equal(a.admit('10.9.9.9').ok, false, 'an address in use keeps its (spent) bucket');
});
