import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** proto/ sits two levels above both src/sources/cri and dist/sources/cri. */
export const CRI_PROTO_PATH = fileURLToPath(new URL('../../../proto/cri-runtime-v1.proto', import.meta.url));

/** Options measured to fit the CRI (NOTES.md): int64 as strings, enums as names. */
export const PROTO_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

type ServiceCtor = grpc.ServiceClientConstructor;
let cached: { RuntimeService: ServiceCtor; ImageService: ServiceCtor } | undefined;

export function criServices(): { RuntimeService: ServiceCtor; ImageService: ServiceCtor } {
  if (!cached) {
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(CRI_PROTO_PATH, PROTO_OPTIONS)) as unknown as {
      runtime: { v1: { RuntimeService: ServiceCtor; ImageService: ServiceCtor } };
    };
    cached = pkg.runtime.v1;
  }
  return cached;
}
