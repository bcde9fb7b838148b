import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import type { Options } from '@grpc/proto-loader';
import protobuf from 'protobufjs/light.js';
import { decodeContainerEnd, decodeContainerList, decodeSandboxList } from './decode.js';

/** proto/ sits two levels above both src/readers/cri and dist/readers/cri. */
export const CRI_PROTO_PATH = fileURLToPath(new URL('../../../proto/cri-runtime-v1.proto', import.meta.url));
/**
 * The same proto as protobufjs' JSON descriptor, made from the .proto by
 * scripts/cri-descriptor.ts (test/readers/cri/proto.test.ts keeps them equal). Loading it
 * skips the .proto parser, and building the coders here skips proto-loader's package
 * definition, which turns every message into a DescriptorProto for reflection the
 * client never uses (bench/RESULTS.md, "a precompiled CRI descriptor").
 */
export const CRI_DESCRIPTOR_PATH = fileURLToPath(new URL('../../../proto/cri-runtime-v1.json', import.meta.url));

/** Options that fit the CRI, as tried against containerd 1.6.20: int64 as strings, enums as names. */
export const PROTO_OPTIONS: Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

type ServiceCtor = grpc.ServiceClientConstructor;
interface CriCoders {
  RuntimeService: ServiceCtor;
  ImageService: ServiceCtor;
  /** ContainerStatus decoded for a list row's fields only (decode.ts); the rest skipped on the wire */
  containerEnd: UnaryCoder;
  /** ListContainers / ListPodSandbox decoded into records (decode.ts) */
  containerList: UnaryCoder;
  sandboxList: UnaryCoder;
}
let cached: CriCoders | undefined;

/** How one unary call's messages are written and read, for grpc.Client.makeUnaryRequest. */
export interface UnaryCoder {
  path: string;
  serialize: (value: object) => Buffer;
  deserialize: (bytes: Buffer) => object;
}

export function criServices(): CriCoders {
  if (!cached) {
    const root = protobuf.Root.fromJSON(JSON.parse(readFileSync(CRI_DESCRIPTOR_PATH, 'utf8')) as protobuf.INamespace);
    const runtime = root.lookupService('runtime.v1.RuntimeService');
    cached = {
      RuntimeService: serviceClient(runtime),
      ImageService: serviceClient(root.lookupService('runtime.v1.ImageService')),
      containerEnd: {
        path: `/${runtime.fullName.slice(1)}/ContainerStatus`,
        serialize: serializer(root.lookupType('runtime.v1.ContainerStatusRequest')),
        deserialize: decodeContainerEnd,
      },
      containerList: {
        path: `/${runtime.fullName.slice(1)}/ListContainers`,
        serialize: serializer(root.lookupType('runtime.v1.ListContainersRequest')),
        deserialize: decodeContainerList,
      },
      sandboxList: {
        path: `/${runtime.fullName.slice(1)}/ListPodSandbox`,
        serialize: serializer(root.lookupType('runtime.v1.ListPodSandboxRequest')),
        deserialize: decodeSandboxList,
      },
    };
  }
  return cached;
}

/** What proto-loader's loadSync + grpc.loadPackageDefinition make of one service, for a client. */
function serviceClient(service: protobuf.Service): ServiceCtor {
  const def: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const m of service.methodsArray) {
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    def[m.name] = {
      path: `/${service.fullName.slice(1)}/${m.name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: serializer(req),
      requestDeserialize: deserializer(req),
      responseSerialize: serializer(res),
      responseDeserialize: deserializer(res),
      originalName: m.name[0]!.toLowerCase() + m.name.slice(1),
    };
  }
  return grpc.makeGenericClientConstructor(def, service.name);
}

const serializer = (type: protobuf.Type) => (value: object) => {
  if (Array.isArray(value)) throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
  return type.encode(type.fromObject(value)).finish() as Buffer; // a Buffer under Node (protobufjs' BufferWriter)
};
const deserializer = (type: protobuf.Type) => (bytes: Buffer) => type.toObject(type.decode(bytes), PROTO_OPTIONS as protobuf.IConversionOptions);
