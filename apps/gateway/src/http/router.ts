/**
 * How routes are registered: the router registers each route's declaration (route-doc.ts) with
 * fastify (behind the API-key gate unless public) and keeps it, from which /openapi.json is built
 * and against which docs/api.md is tested.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteGenericInterface } from "fastify";
import { authenticate, authenticateKept, type AuthOptions } from "./authenticate.js";
import type { Principal } from "../auth/principals.js";
import { inRequestSpan, traceRequests } from "./request-spans.js";
import type { RouteDoc } from "./route-doc.js";
import { measureRequests } from "./metrics.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The tenant the request acts for (of its API key, environment key or sessions token); "" on public routes. */
    tenant: string;
    /** Who the request acts for; undefined on public routes. */
    principal: Principal | undefined;
  }
}

export type Handler<RG extends RouteGenericInterface> = (req: FastifyRequest<RG>, reply: FastifyReply) => Promise<unknown>;

export class Router {
  readonly routes: RouteDoc[] = [];

  constructor(
    private readonly app: FastifyInstance,
    private readonly auth: AuthOptions,
  ) {
    traceRequests(app);
    measureRequests(app);
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
            // fastify's `done` rather than a promise, and no query for a key kept (authenticateKept).
            onRequest: (req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
              const admitted = (principal: Principal): void => {
                req.principal = principal;
                req.tenant = principal.tenant;
                done();
              };
              let known: Principal | undefined;
              try {
                known = authenticateKept(req, auth, doc.accepts);
              } catch (err) {
                done(err as FastifyError);
                return;
              }
              if (known !== undefined) admitted(known);
              else authenticate(req, auth, doc.accepts).then(admitted, (err: unknown) => done(err as FastifyError));
            },
          }),
      config: { doc },
      handler: (req, reply) => inRequestSpan(req, reply, () => handler(req as FastifyRequest<RG>, reply)),
    });
  }
}

