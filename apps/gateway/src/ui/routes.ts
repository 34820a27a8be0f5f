/**
 * The session page: GET / (a redirect to it), /ui/ (the sessions of the key's tenant), /ui/sessions/:id (one
 * session as a live timeline) and /ui/traces/:id (one trace as a waterfall), their static
 * files, and small JSON routes for what the Managed Agents API does not show (traces and
 * thinking of events, each session's last activity, a trace read from Jaeger). The pages
 * themselves hold no data; everything they show is fetched with the API key the person entered,
 * from /v1 and /ui/api, both scoped to the key's tenant. These routes are not part of the
 * Managed Agents API, so they stay out of /openapi.json.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Principals } from "../auth/principals.js";
import { authenticate } from "../http/authenticate.js";
import { ApiError } from "../errors/api-error.js";
import { ASSET_NAME, loadAssets } from "./assets.js";
import { activity, activityQuery, eventsQuery, readUiEvents, sessionParams, type ActivityQuery, type EventsQuery, type UiApiDeps } from "./api.js";
import type { UiConfig } from "./config.js";
import { JaegerQuery } from "./jaeger.js";
import { CONTENT_SECURITY_POLICY, pageHtml } from "./page.js";
import { JaegerHealth, readTrace, traceParams } from "./traces.js";

export interface UiOptions extends UiConfig {
  readonly principals: Principals;
}

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

export function registerUiRoutes(app: FastifyInstance, ctx: UiApiDeps, opts: UiOptions): void {
  // A plugin, so its hooks apply to these routes only; fastify awaits it before listening.
  void app.register(async (ui) => {
    const assets = await loadAssets();
    const html = pageHtml({ traceUrlTemplate: opts.traceUrlTemplate, prices: opts.prices, built: assets.has("app.js") });

    ui.addHook("onSend", async (_req, reply) => {
      void reply.headers(SECURITY_HEADERS);
    });

    const page = (_req: FastifyRequest, reply: FastifyReply): FastifyReply =>
      reply.header("cache-control", "no-cache").type("text/html; charset=utf-8").send(html);
    // The gateway's root is where a person lands first: the page.
    ui.get("/", (_req, reply) => reply.redirect("/ui/", 302));
    ui.get("/ui", (_req, reply) => reply.redirect("/ui/", 308));
    ui.get("/ui/", page);
    ui.get("/ui/sessions/:session_id", page);
    ui.get("/ui/traces/:trace_id", page);

    ui.get<{ Params: { name: string } }>("/ui/assets/:name", (req, reply) => {
      const found = ASSET_NAME.test(req.params.name) ? assets.get(req.params.name) : undefined;
      if (found === undefined) throw new ApiError("not_found", `Not found: ${req.url}`);
      void reply.headers({ "cache-control": "no-cache", etag: found.etag, "content-type": found.contentType });
      if (req.headers["if-none-match"] === found.etag) return reply.code(304).send();
      return reply.send(found.body);
    });

    // The JSON routes: the key's tenant, as on /v1 (another tenant's session is not found).
    const auth = { principals: opts.principals, requireBetaHeader: false };
    const authenticated = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      req.tenant = (await authenticate(req, auth)).tenant;
      void reply.header("cache-control", "no-store");
    };
    ui.get<{ Params: { session_id: string }; Querystring: EventsQuery }>(
      "/ui/api/sessions/:session_id/events",
      { onRequest: authenticated, schema: { params: sessionParams, querystring: eventsQuery } },
      async (req) => readUiEvents(ctx, req.tenant, req.params.session_id, req.query),
    );
    ui.get<{ Querystring: ActivityQuery }>(
      "/ui/api/activity",
      { onRequest: authenticated, schema: { querystring: activityQuery } },
      async (req) => activity(ctx, req.tenant, req.query.session_id),
    );
    const jaeger = opts.jaegerQueryUrl === undefined ? undefined : new JaegerQuery(opts.jaegerQueryUrl);
    const health = new JaegerHealth(ui.log);
    ui.get<{ Params: { trace_id: string } }>(
      "/ui/api/traces/:trace_id",
      { onRequest: authenticated, schema: { params: traceParams } },
      async (req) => readTrace(ctx, jaeger, health, req.tenant, req.params.trace_id),
    );
  });
}
