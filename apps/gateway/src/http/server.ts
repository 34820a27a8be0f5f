/**
 * The fastify instance every route hangs off: request ids (`request-id`, as Anthropic sends),
 * the SDK's query encoding (`types[]=a&types[]=b`), ajv set to refuse unknown fields rather than
 * drop them and to take bodies as typed, and one error path that renders every failure as the Anthropic error body with
 * the status of its catalog entry. One structured log line per request.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import { Ajv, type Options as AjvOptions } from "ajv";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { ApiError } from "../errors/api-error.js";
import { ERROR_CATALOG } from "../errors/catalog.js";
import { REQUEST_ID_PREFIX, newId } from "../ids.js";
import { requestLogger } from "./request-logger.js";
import { validationError } from "./validation.js";

export interface ServerOptions {
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
}

/**
 * `a=1&a=2` and `a[]=1&a[]=2` both read as `a: ["1","2"]` (the SDK sends the second); a single
 * `a[]=1` is a one-element array. Bracketed keys with a name inside, `created_at[gte]`, are kept.
 */
export function parseQuery(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  // Most requests have no query: no URLSearchParams for them (its iterator and entries included).
  if (raw.length === 0) return out;
  for (const [rawKey, value] of new URLSearchParams(raw)) {
    const isList = rawKey.endsWith("[]");
    const key = isList ? rawKey.slice(0, -2) : rawKey;
    const prior = out[key];
    if (prior === undefined) out[key] = isList ? [value] : value;
    else out[key] = Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  return out;
}

/** Renders any error as the Anthropic error body, with the catalog's status and retry hint. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  const entry = ERROR_CATALOG[err.error];
  return reply
    .code(entry.status)
    .headers({ "x-should-retry": String(entry.retry), ...err.headers })
    .send(err.body(req.id));
}

function fromFastify(err: FastifyError): ApiError {
  if (err.validation !== undefined) return validationError(err.validation, err.validationContext);
  if (err.statusCode === 413) return new ApiError("request_too_large", "Request exceeds the maximum allowed number of bytes.", { cause: err });
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return new ApiError("invalid_request", "content-type: must be application/json", { cause: err });
  }
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
    return new ApiError("invalid_request", `body: ${err.message}`, { cause: err });
  }
  return ApiError.from(err);
}

function isFastifyError(err: unknown): err is FastifyError {
  return err instanceof Error && ("validation" in err || ("code" in err && typeof err.code === "string" && err.code.startsWith("FST_")));
}

const AJV_OPTIONS: AjvOptions = { removeAdditional: false, useDefaults: false, discriminator: true, allErrors: false, allowUnionTypes: true };
/**
 * Query strings and path parameters arrive as text, so their numbers are read from it ("20") and
 * one `types[]=a` is a list. A body is JSON, which says what each value is: coerced, as fastify's
 * one ajv does for every part, `{"name": 123}` was stored as "123" and a metadata value null as "".
 */
function validatorsByPart(): { readonly body: Ajv; readonly text: Ajv } {
  return { body: new Ajv({ ...AJV_OPTIONS, coerceTypes: false }), text: new Ajv({ ...AJV_OPTIONS, coerceTypes: "array" }) };
}

/** Requests whose failure the thrower logged already (ApiError.logged): their access line is not a warning too. */
const accountedFor = new WeakSet<FastifyRequest>();

export function createServer(opts: ServerOptions): FastifyInstance {
  const loggerInstance: FastifyBaseLogger = opts.logger;
  const app = Fastify({
    loggerInstance,
    // One line per request is written by the onResponse hook below, with the tenant.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    // Each request's child logger made at its first line written (request-logger.ts).
    childLoggerFactory: requestLogger,
    bodyLimit: opts.bodyLimitBytes,
    forceCloseConnections: true,
    // HEAD would run GET handlers, the event stream's included; nothing here needs it.
    exposeHeadRoutes: false,
    genReqId: () => newId(REQUEST_ID_PREFIX),
    routerOptions: { querystringParser: parseQuery },
  });
  // An empty body is no body, whatever its content-type: the Python SDK sends
  // `Content-Type: application/json` with nothing after it on every POST and DELETE without
  // params (archive, delete, ...), which fastify's parser refused ("Body cannot be empty").
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    // parseAs "string": the body is a string here.
    if (body.length === 0) done(null, undefined);
    else void json(req, body as string, done);
  });
  const validators = validatorsByPart();
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === "body" ? validators.body : validators.text).compile(schema));
  app.decorateRequest("tenant", "");
  app.decorateRequest("principal", undefined);

  // Hooks here and in the router's modules take fastify's `done` rather than returning a promise:
  // each async hook cost every request a promise and a microtask hop (issue 31).
  app.addHook("onRequest", (req, reply, done) => {
    void reply.header("request-id", req.id);
    done();
  });

  app.addHook("onResponse", (req, reply, done) => {
    const line = {
      method: req.method,
      route: req.routeOptions.url,
      status: reply.statusCode,
      tenant: req.tenant === "" ? undefined : req.tenant,
      ms: Math.round(reply.elapsedTime),
    };
    if (reply.statusCode >= 500 && !accountedFor.has(req)) req.log.warn(line, "request failed");
    else req.log.info(line, "request");
    done();
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    const apiError = isFastifyError(err) ? fromFastify(err) : ApiError.from(err);
    if (apiError.logged) accountedFor.add(req);
    else if (apiError.serverSide) req.log.error({ err, tenant: req.tenant }, apiError.message);
    return sendError(req, reply, apiError);
  });

  app.setNotFoundHandler((req, reply) =>
    sendError(req, reply, new ApiError("not_found", `Not found: ${req.method} ${req.url.split("?")[0] ?? ""}`)),
  );
  return app;
}
