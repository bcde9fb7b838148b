/**
 * The runtime's events of one container attempt, in the order they happened. The stamps are
 * those containerd 2.1 gave a crash-looping busybox container in the end-to-end node VM: it
 * stamps startedAt when its start call returns, after a process that exits at once has
 * already exited, so finishedAt is 24.7 ms before startedAt.
 */
import t from 'tap';
import type { ContainerRow } from '../../src/view/runtime-view.js';
import { runtimeEvents } from '../../src/view/timeline/runtime.js';
import type { TimelineQuery } from '../../src/view/timeline/window.js';

const us = (iso: string) => Date.parse(iso) * 1000;
const q: TimelineQuery = { sinceUs: us('2026-12-02T11:00:00Z'), untilUs: us('2026-12-02T12:00:00Z'), pods: null, sources: new Set(), limit: 500, verbose: false, nowUs: us('2026-12-02T12:00:00Z') };

const row = (o: Partial<ContainerRow>): ContainerRow => ({
  id: 'c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80',
  name: 'crash',
  attempt: 1,
  podId: 'p1',
  image: 'localhost/e2e/busybox:1',
  imageRef: 'sha256:0',
  state: 'CONTAINER_EXITED',
  createdAt: '2026-12-02T11:59:31.201114Z',
  labels: {},
  annotations: {},
  podName: 'crashloop',
  podNamespace: 'e2e',
  podUid: 'u1',
  exitCode: 1,
  reason: 'Error',
  startedAt: '2026-12-02T11:59:31.364465Z',
  finishedAt: '2026-12-02T11:59:31.339753Z',
  statusError: null,
  ...o,
});

t.test('a start stamped after its exit is placed before it, its evidence unchanged', async (t) => {
  const events = runtimeEvents([row({})], [], q).list().map((x) => x.event);
  t.same(events.map((e) => e.kind), ['container-created', 'container-started', 'container-exited']);
  t.equal(events[1]!.time, '2026-12-02T11:59:31.339753Z', 'the start at the exit');
  t.match(events[1]!.evidence, [{ excerpt: 'startedAt=2026-12-02T11:59:31.364465Z' }], 'the recorded stamp kept');
  t.match(events[1]!.summary, /stamped its start after its exit/);
});

t.test('an ordinary attempt keeps its own stamps', async (t) => {
  const events = runtimeEvents([row({ startedAt: '2026-12-02T11:59:31.300000Z', finishedAt: '2026-12-02T11:59:40.000000Z' })], [], q).list().map((x) => x.event);
  t.same(events.map((e) => [e.kind, e.time]), [
    ['container-created', '2026-12-02T11:59:31.201114Z'],
    ['container-started', '2026-12-02T11:59:31.300000Z'],
    ['container-exited', '2026-12-02T11:59:40.000000Z'],
  ]);
  t.notMatch(events[1]!.summary, /stamped/);
});
