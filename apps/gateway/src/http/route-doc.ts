/**
 * A route's declaration: its SDK method, the SDK type of its answer, its request schemas and the
 * catalog errors it can produce. The router (router.ts) registers routes by it and keeps it; the
 * request spans (request-spans.ts) name spans by it; /openapi.json (openapi.ts) is built from it.
 */
import type { CredentialKind } from "../auth/principals.js";
import type { GatewayErrorName } from "../errors/catalog.js";
import type { JsonSchema } from "./json-schema.js";

export type Method = "GET" | "POST" | "DELETE";

export interface RouteDoc {
  readonly method: Method;
  /** fastify's spelling: `/v1/agents/:agent_id`. */
  readonly url: string;
  /** The SDK call this route serves, e.g. `beta.agents.create`. */
  readonly sdk: string;
  readonly summary: string;
  /** The SDK type of a successful answer. */
  readonly response: string;
  /** Errors beyond the common ones (catalog.ts COMMON_ERRORS). */
  readonly errors: readonly GatewayErrorName[];
  readonly schema?: { readonly params?: JsonSchema; readonly querystring?: JsonSchema; readonly body?: JsonSchema };
  /** Answers with server-sent events. */
  readonly stream?: boolean;
  /** Served without an API key. */
  readonly public?: boolean;
  /** The kinds of credential it takes (auth/principals.ts); an API key only when absent. */
  readonly accepts?: readonly CredentialKind[];
  /** Ours, not an SDK method: callers use the SDK's generic `client.post()` and friends. */
  readonly extension?: boolean;
}
