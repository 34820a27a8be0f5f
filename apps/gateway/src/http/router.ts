/**
 * How routes are declared: each one states its SDK method, the SDK type of its answer, its
 * request schemas and the catalog errors it can produce. The router registers it with fastify
 * (behind the API-key gate unless public) and keeps the declaration, from which /openapi.json is
 * built and against which docs/api.md is tested.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteGenericInterface } from "fastify";
import { authenticate, type AuthOptions } from "./authenticate.js";
import type { CredentialKind, Principal } from "../auth/principals.js";
import type { GatewayErrorName } from "../errors/catalog.js";
import type { JsonSchema } from "./json-schema.js";
import { inRequestSpan, traceRequests } from "./request-spans.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The tenant the request acts for (of its API key, environment key or sessions token); "" on public routes. */
    tenant: string;
    /** Who the request acts for; undefined on public routes. */
    principal: Principal | undefined;
  }
}

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

export type Handler<RG extends RouteGenericInterface> = (req: FastifyRequest<RG>, reply: FastifyReply) => Promise<unknown>;

export class Router {
  readonly routes: RouteDoc[] = [];

  constructor(
    private readonly app: FastifyInstance,
    private readonly auth: AuthOptions,
  ) {
    traceRequests(app);
  }

  add<RG extends RouteGenericInterface = RouteGenericInterface>(doc: RouteDoc, handler: Handler<RG>): void {
    this.routes.push(doc);
    const auth = this.auth;
    // Registered with fastify's default generics: the route's own types (RG) describe what its
    // schemas let through, which fastify cannot infer from plain JSON schemas.
    this.app.route({
      method: doc.method,
      url: doc.url,
      schema: { ...doc.schema },
      ...(doc.public === true
        ? {}
        : {
            onRequest: async (req: FastifyRequest) => {
              const principal = await authenticate(req, auth, doc.accepts);
              req.principal = principal;
              req.tenant = principal.tenant;
            },
          }),
      config: { doc },
      handler: (req, reply) => inRequestSpan(req, reply, () => handler(req as FastifyRequest<RG>, reply)),
    });
  }
}

