/**
 * grpc.health.v1.Health/Check with its messages left as bytes (never encoded or decoded), for the
 * benchmarks' floor: the client in service.ts and the server in grpc-alone-server.ts.
 */
const identity = (b: Buffer): Buffer => b;

export const HEALTH_CHECK = {
  check: {
    path: "/grpc.health.v1.Health/Check",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
} as const;
