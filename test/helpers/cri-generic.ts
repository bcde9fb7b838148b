/**
 * The generic path src/readers/cri/decode.ts replaced, kept as the oracle its tests and
 * bench/cri-decode.ts compare against: a list as protobufjs decodes it and toObject gives it
 * (camelCase, int64 as decimal strings, enums as names), mapped to the same records and
 * redacted the same way.
 */
import type { Container, ContainerState, PodSandbox } from '../../src/model/runtime.js';
import { nanosToRfc3339, toPodSandbox } from '../../src/readers/cri/normalize.js';
import { redactMap } from '../../src/redact.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- wire messages are untyped JSON */
type Wire = any;

const num = (v: unknown): number => (v === null || v === undefined || v === '' ? 0 : Number(v));

export function toContainer(c: Wire): Container {
  return {
    id: c.id,
    name: c.metadata?.name ?? '',
    attempt: num(c.metadata?.attempt),
    podId: c.podSandboxId,
    image: c.image?.userSpecifiedImage || c.image?.image || '',
    imageRef: c.imageRef ?? '',
    state: c.state as ContainerState,
    createdAt: nanosToRfc3339(c.createdAt),
    labels: redactMap(c.labels ?? {}),
    annotations: redactMap(c.annotations ?? {}),
  };
}

export const toContainers = async (items: readonly Wire[]): Promise<Container[]> => items.map(toContainer);
export const toPodSandboxes = async (items: readonly Wire[]): Promise<PodSandbox[]> => items.map(toPodSandbox);
