/**
 * @metaharness/service-kit/grpc: the gRPC server (health, reflection, size limits, undecodable
 * requests answered as INVALID_ARGUMENT naming the field), handler wrappers that turn errors into
 * statuses, traced typed clients, TLS for the links between services, and deadlines.
 */
export { deadline, type Deadline } from "./deadline.js";
export {
  startGrpcServer,
  serviceNameOf,
  DEFAULT_SHUTDOWN_GRACE_MS,
  MAX_RECEIVE_MESSAGE_BYTES,
  MAX_EVENT_BYTES,
  MAX_CLIENT_RECEIVE_MESSAGE_BYTES,
  type GrpcServerHandle,
  type GrpcServerOptions,
  type ServiceRegistration,
} from "./grpc-server.js";
export { unary, serverStream, type CallContext, type ServerStreamWriter } from "./grpc-handlers.js";
export {
  ERROR_DETAILS_KEY,
  ERROR_FIELD_KEY,
  fromServiceError,
  isServiceError,
  toMhError,
  toStatusError,
  type StatusError,
} from "./grpc-errors.js";
export { checkNoNul } from "./request-text.js";
export {
  createClient,
  promisify,
  readServiceToken,
  streamCall,
  traceContextInterceptor,
  unaryCall,
  DEFAULT_DEADLINE_MS,
  type CallOptions,
  type ClientConstructor,
  type CreateClientOptions,
  type PromiseClient,
  type UnaryMethod,
} from "./grpc-client.js";
export { ResetGuardedChannel, SERVER_RESET_BURST, RESET_RATE_PER_S, RESET_MARGIN, RESET_PREPARE } from "./reset-guard.js";
export { GRPC_HEALTH_ENV } from "./grpc-health-port.js";
export { GRPC_TLS_ENV, loadGrpcTls, PLAINTEXT, type GrpcTls, type GrpcTlsSettings, type HttpsClientTls, type HttpsServerTls } from "./grpc-tls.js";
export { UndecodableRequest } from "./undecodable.js";
