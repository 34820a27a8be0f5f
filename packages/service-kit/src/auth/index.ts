/**
 * @metaharness/service-kit/auth: who may call a service: service tokens (read from a file, kept as
 * digests, each a named caller with a role), handlers guarded by a policy, and the HTTP header a
 * service token travels in beside someone else's Authorization.
 */
export { MIN_TOKEN_CHARS, SERVICE_AUTH_HEADER, ServiceTokens, type Caller, type Policy } from "./service-tokens.js";
export { guardedBidi, guardedServerStream, guardedUnary, type Guard, type GuardedContext } from "./guarded.js";
