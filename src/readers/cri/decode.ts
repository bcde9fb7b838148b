/**
 * The CRI answers every reading asks for, decoded from the wire straight into the runtime's
 * records (model/runtime.ts): ListContainersResponse, ListPodSandboxResponse, and the
 * ContainerStatusResponse of each list row (only the fields of ContainerEnd).
 *
 * The generic path (proto.ts: protobufjs decode, then toObject with int64 as strings, then
 * normalize.ts) builds three objects per item, a long.js object and its decimal string per
 * timestamp, and a copy of every map; at 1,000 containers per reading that garbage was the
 * larger part of a list's cost. Here each item is one record; labels and annotations are read
 * into one plain object each and left unredacted (normalize.ts redacts them in slices, as it
 * did), and created_at (int64 nanoseconds) goes from its varint to RFC 3339 without a Long or a
 * BigInt, exact to the nanosecond.
 *
 * The values are the generic path's, byte for byte, for every input that path accepts, and
 * the errors are its errors where it throws (test/readers/cri/decode.test.ts compares both on
 * real and randomised wire bytes). What that takes, from protobufjs 7's generated decoders:
 * a known field number is read by its declared type whatever its wire type; a message field
 * seen twice is replaced, not merged; a map's later duplicate key wins in the first one's
 * place, and the key `__proto__` is an own property; an unknown enum number stays a number;
 * a nested message's length bounds its reads. ContainerEnd's generic path is a protobufjs
 * type of the six fields it names, every other field skipped by its wire type.
 */
import protobuf from 'protobufjs/light.js';
import type { Container, ContainerEnd, ContainerState, PodSandbox, SandboxState } from '../../model/runtime.js';
import { enter, enumName, leave, readEntry, readNanos, type Reader } from './wire.js';

const CONTAINER_STATES = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'] as const;
const SANDBOX_STATES = ['SANDBOX_READY', 'SANDBOX_NOTREADY'] as const;

function readContainer(r: Reader): Container {
  const bound = enter(r);
  let id = '';
  let podId = '';
  let name = '';
  let attempt = 0;
  let image = '';
  let userSpecifiedImage = '';
  let imageRef = '';
  let state = 0;
  let createdAt: string | null = null;
  let labels: Record<string, string> | null = null;
  let annotations: Record<string, string> | null = null;
  while (r.pos < bound.end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        id = r.string();
        break;
      case 2:
        podId = r.string();
        break;
      case 3: {
        // ContainerMetadata: a second one replaces the first
        const m = enter(r);
        name = '';
        attempt = 0;
        while (r.pos < m.end) {
          const t = r.uint32();
          if (t >>> 3 === 1) name = r.string();
          else if (t >>> 3 === 2) attempt = r.uint32();
          else r.skipType(t & 7, 2);
        }
        leave(r, m);
        break;
      }
      case 4: {
        // ImageSpec: image and user_specified_image; its annotations and the rest skipped
        const m = enter(r);
        image = '';
        userSpecifiedImage = '';
        while (r.pos < m.end) {
          const t = r.uint32();
          const f = t >>> 3;
          if (f === 1) image = r.string();
          else if (f === 18) userSpecifiedImage = r.string();
          else if (f === 2) readEntry(r, {}, 2);
          else if (f === 19 || f === 20) r.skip(r.uint32());
          else r.skipType(t & 7, 2);
        }
        leave(r, m);
        break;
      }
      case 5:
        imageRef = r.string();
        break;
      case 6:
        state = r.int32();
        break;
      case 7:
        createdAt = readNanos(r);
        break;
      case 8:
        readEntry(r, (labels ??= {}), 1);
        break;
      case 9:
        readEntry(r, (annotations ??= {}), 1);
        break;
      case 10:
        r.string();
        break;
      default:
        r.skipType(tag & 7, 1);
    }
  }
  leave(r, bound);
  return {
    id,
    name,
    attempt,
    podId,
    image: userSpecifiedImage || image || '',
    imageRef,
    state: enumName<ContainerState>(CONTAINER_STATES, state),
    createdAt,
    labels: labels ?? {},
    annotations: annotations ?? {},
  };
}

function readSandbox(r: Reader): PodSandbox {
  const bound = enter(r);
  let id = '';
  let name = '';
  let uid = '';
  let namespace = '';
  let attempt = 0;
  let state = 0;
  let createdAt: string | null = null;
  let labels: Record<string, string> | null = null;
  let annotations: Record<string, string> | null = null;
  let runtimeHandler = '';
  while (r.pos < bound.end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        id = r.string();
        break;
      case 2: {
        const m = enter(r);
        name = '';
        uid = '';
        namespace = '';
        attempt = 0;
        while (r.pos < m.end) {
          const t = r.uint32();
          const f = t >>> 3;
          if (f === 1) name = r.string();
          else if (f === 2) uid = r.string();
          else if (f === 3) namespace = r.string();
          else if (f === 4) attempt = r.uint32();
          else r.skipType(t & 7, 2);
        }
        leave(r, m);
        break;
      }
      case 3:
        state = r.int32();
        break;
      case 4:
        createdAt = readNanos(r);
        break;
      case 5:
        readEntry(r, (labels ??= {}), 1);
        break;
      case 6:
        readEntry(r, (annotations ??= {}), 1);
        break;
      case 7:
        runtimeHandler = r.string();
        break;
      default:
        r.skipType(tag & 7, 1);
    }
  }
  leave(r, bound);
  return {
    id,
    name,
    namespace,
    uid,
    attempt,
    state: enumName<SandboxState>(SANDBOX_STATES, state),
    createdAt,
    labels: labels ?? {},
    annotations: annotations ?? {},
    runtimeHandler,
  };
}

function readList<T>(bytes: Uint8Array, item: (r: Reader) => T): T[] {
  const r = protobuf.Reader.create(bytes);
  const out: T[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) out.push(item(r));
    else r.skipType(tag & 7, 0);
  }
  return out;
}

/** ListContainersResponse: its containers, labels and annotations not yet redacted. */
export const decodeContainerList = (bytes: Uint8Array): { containers: Container[] } => ({ containers: readList(bytes, readContainer) });

/** ListPodSandboxResponse: its sandboxes, labels and annotations not yet redacted. */
export const decodeSandboxList = (bytes: Uint8Array): { items: PodSandbox[] } => ({ items: readList(bytes, readSandbox) });

/**
 * ContainerStatusResponse read for a list row: ContainerStatus's id (1), state (3), started_at
 * (5), finished_at (6), exit_code (7) and reason (10); the rest skipped unread. With no
 * status at all, id and state undefined (the row then keeps its list fields).
 */
export function decodeContainerEnd(bytes: Uint8Array): ContainerEnd {
  const r = protobuf.Reader.create(bytes);
  let end: ContainerEnd | null = null;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) end = readEnd(r);
    else r.skipType(tag & 7, 0);
  }
  return end ?? { id: undefined as unknown as string, state: undefined as unknown as ContainerState, startedAt: null, finishedAt: null, exitCode: 0, reason: '' };
}

function readEnd(r: Reader): ContainerEnd {
  const bound = enter(r);
  let id = '';
  let state = 0;
  let startedAt: string | null = null;
  let finishedAt: string | null = null;
  let exitCode = 0;
  let reason = '';
  while (r.pos < bound.end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        id = r.string();
        break;
      case 3:
        state = r.int32();
        break;
      case 5:
        startedAt = readNanos(r);
        break;
      case 6:
        finishedAt = readNanos(r);
        break;
      case 7:
        exitCode = r.int32();
        break;
      case 10:
        reason = r.string();
        break;
      default:
        r.skipType(tag & 7, 1);
    }
  }
  leave(r, bound);
  return { id, state: enumName<ContainerState>(CONTAINER_STATES, state), startedAt, finishedAt, exitCode, reason };
}
