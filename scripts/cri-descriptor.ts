/**
 * Writes proto/cri-runtime-v1.json, the CRI proto as protobufjs' JSON descriptor
 * (Root.toJSON), which src/readers/cri/proto.ts loads at start instead of parsing the
 * .proto text (start-up time). Run after editing the .proto:
 *
 *   npx tsx scripts/cri-descriptor.ts
 *
 * test/readers/cri/proto.test.ts makes it again from the .proto and fails when the
 * committed file differs, so the two never drift.
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import protobuf from 'protobufjs';
import { CRI_DESCRIPTOR_PATH, CRI_PROTO_PATH, PROTO_OPTIONS } from '../src/readers/cri/proto.js';

/** The descriptor's text: parsed as @grpc/proto-loader's loadSync parses it (field names camelCased unless keepCase). */
export function criDescriptorText(): string {
  const root = new protobuf.Root().loadSync(CRI_PROTO_PATH, { keepCase: PROTO_OPTIONS.keepCase ?? false });
  root.resolveAll();
  return `${JSON.stringify(root.toJSON({ keepComments: false }), null, 1)}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(CRI_DESCRIPTOR_PATH, criDescriptorText());
  console.log(`wrote ${CRI_DESCRIPTOR_PATH}`);
}
