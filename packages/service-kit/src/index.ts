/**
 * @metaharness/service-kit: what every service shares from day one — typed config from the
 * environment, a structured logger, a gRPC server with health and reflection, handler wrappers
 * that turn errors into statuses, traced typed clients, and graceful shutdown.
 */
export { Cleanups } from "./cleanups.js";
export { deadline, type Deadline } from "./deadline.js";
export {
  readConfig,
  ConfigError,
  type ConfigOf,
  type ConfigSpec,
  type EnvResult,
  type EnvSource,
  type EnvVar,
} from "./config.js";
export { METRICS_ENV, metricsOptions, type MetricsSettings } from "./metrics-env.js";
export { env, type EnvOptions, type RangeOptions, type UrlOptions } from "./env.js";
export {
  createLogger,
  loggerFor,
  REDACTED_KEYS,
  type LogContext,
  type Logger,
  type LoggerOptions,
  type LogLevel,
} from "./logger.js";
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
export {
  installShutdown,
  runShutdown,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type InstallShutdownOptions,
  type ShutdownHandle,
  type ShutdownOptions,
  type ShutdownStep,
} from "./shutdown.js";
export { checkKeyPair, checkRoots, invalidSetting, readPem } from "./pem.js";
export { GRPC_HEALTH_ENV } from "./grpc-health-port.js";
export { GRPC_TLS_ENV, loadGrpcTls, PLAINTEXT, type GrpcTls, type GrpcTlsSettings, type HttpsClientTls, type HttpsServerTls } from "./grpc-tls.js";
export { runService, type RunServiceOptions, type ServiceBasics } from "./run-service.js";
export { UndecodableRequest } from "./undecodable.js";
export { MIN_TOKEN_CHARS, SERVICE_AUTH_HEADER, ServiceTokens, type Caller, type Policy } from "./service-tokens.js";
export { guardedBidi, guardedServerStream, guardedUnary, type Guard, type GuardedContext } from "./guarded.js";
