/** The CRI log line format (src/readers/podlogs/cri-log.ts). */
import t from 'tap';
import { parseCriLine } from '../../../src/readers/podlogs/cri-log.js';

/** a line as the reader hands it over: its bytes, without the newline */
const parseCriLogLine = (line: string) => parseCriLine(Buffer.from(line, 'utf8'));

t.test('CRI line format', async (t) => {
  t.same(parseCriLogLine('2026-11-29T17:42:28.926903430Z stdout F hello world'), {
    time: '2026-11-29T17:42:28.926903430Z',
    us: 1795974148926903,
    stream: 'stdout',
    partial: false,
    message: Buffer.from('hello world'),
    cut: false,
  });
  t.same(parseCriLogLine('2026-11-29T17:42:28.9Z stderr P ')?.message, Buffer.alloc(0));
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stderr P ')?.partial, true);
  t.same(parseCriLogLine('2026-11-29T17:42:28.9Z stdout F')?.message, Buffer.alloc(0));
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdout F:x y')?.partial, false, 'a tag with a suffix');
  t.equal(parseCriLogLine('garbage'), null);
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdin F x'), null);
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdout X x'), null);
});
