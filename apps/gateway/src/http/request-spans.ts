/**
 * Every request to the API (and to the session page's JSON) is a SERVER span continuing the
 * caller's trace (a `traceparent` header), opened as the request arrives: a request refused
 * before its handler runs (no key, a body its schema refuses, an unknown route) is in Jaeger too,
 * with its status. The handler runs inside the span, so its calls to the session log and the
 * harness, and the events it appends, join the same trace. A client's mistake (a 4xx) is an
 * attribute, not an error: as the gRPC services do, only what the server got wrong is one.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { context, extractFromHeaders, getTracer, recordError, ROOT_CONTEXT, SpanKind, trace, type Context, type Span } from "@metaharness/telemetry";
import { ApiError } from "../errors/api-error.js";
import type { RouteDoc } from "./route-doc.js";

interface RequestSpan {
  readonly span: Span;
  readonly context: Context;
  ended: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The API route's declaration (router.ts), for its span's name and attributes. */
    readonly doc?: RouteDoc;
  }
}

const spans = new WeakMap<FastifyRequest, RequestSpan>();

/** Paths traced without a declaration: unknown API routes, and the session page's JSON. */
const UNDECLARED = /^\/(v1|ui\/api)\//;

/** Opens a span per request as it arrives and closes it with the answer's status. */
export function traceRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (req, _reply, done) => {
    open(req);
    done();
  });
  app.addHook("onResponse", (req, reply, done) => {
    finish(req, reply.statusCode);
    done();
  });
}

function open(req: FastifyRequest): void {
  const doc = req.routeOptions.config.doc;
  if (doc === undefined && !UNDECLARED.test(req.url)) return;
  const route = doc?.url ?? req.routeOptions.url ?? "(no route)";
  const params = req.params as Record<string, unknown> | undefined;
  const sessionId = typeof params?.["session_id"] === "string" ? params["session_id"] : undefined;
  const attributes = {
    "http.request.method": req.method,
    "http.route": route,
    "mh.request_id": req.id,
    ...(doc === undefined ? {} : { "mh.sdk": doc.sdk }),
    ...(sessionId === undefined ? {} : { "mh.session_id": sessionId }),
  };
  const parent = extractFromHeaders(req.headers, ROOT_CONTEXT);
  const span = getTracer().startSpan(`${req.method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent);
  spans.set(req, { span, context: trace.setSpan(parent, span), ended: false });
}

/**
 * Runs a handler inside its request's span. A hijacked reply (an event stream) never reaches
 * onResponse: its span ends when the handler does.
 */
export async function inRequestSpan(req: FastifyRequest, reply: FastifyReply, run: () => Promise<unknown>): Promise<unknown> {
  const held = spans.get(req);
  if (held === undefined) return run();
  try {
    return await context.with(held.context, run);
  } catch (err) {
    const status = ApiError.from(err).status;
    if (status >= 500) recordError(held.span, err);
    throw err;
  } finally {
    if (reply.sent) finish(req, reply.statusCode);
  }
}

function finish(req: FastifyRequest, status: number): void {
  const held = spans.get(req);
  if (held === undefined || held.ended) return;
  held.ended = true;
  held.span.setAttribute("http.response.status_code", status);
  held.span.end();
}
