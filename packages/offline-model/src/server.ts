/**
 * `startOfflineModel`: the fastify server that answers as the Messages API does, on an ephemeral
 * port by default. Unknown routes and body errors (bad JSON, too large) answer in the API's error
 * shape too. `close()` is idempotent: it ends in-flight streams at once, then closes every
 * connection, so a test's afterAll never hangs on a keep-alive socket.
 */
import { setMaxListeners } from "node:events";
import { invalidArgument } from "@metaharness/errors";
import Fastify, { type FastifyError } from "fastify";
import { ApiError, errorBody } from "./api-error.js";
import { AttemptCounter } from "./attempts.js";
import { requestId } from "./ids.js";
import { silentLogger, type OfflineModelLogger } from "./logger.js";
import { registerMessagesRoutes } from "./messages-route.js";
import { PromptCache, type PromptCacheOptions } from "./prompt-cache.js";
import { Recorder, type RecordedRequest } from "./recorder.js";
import { ScenarioRegistry } from "./registry.js";
import type { Scenario } from "./scenario.js";
import { loadScenarioFile } from "./scenario-file.js";
import { DEFAULT_WINDOW_TOKENS } from "./config.js";

/** The real API's request size limit. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

export interface OfflineModelOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** 0 (the default) asks the OS for an ephemeral port. */
  readonly port?: number;
  /** Time to first token, per response unless a step overrides it. Default 0. */
  readonly ttftMs?: number;
  /** Output pace after the first token; 0 (the default) sends without pauses. */
  readonly tokensPerSecond?: number;
  /** Scenarios besides the default one; a registry is used as it is (and can grow later). */
  readonly scenarios?: ScenarioRegistry | Iterable<Scenario>;
  /** A .json/.js/.mjs scenario file, loaded at start (see scenario-file.ts). */
  readonly scenarioFile?: string;
  /** When set, requests must carry this key; otherwise any non-empty key is accepted. */
  readonly apiKey?: string;
  readonly cache?: PromptCacheOptions;
  /**
   * The model's context window in tokens (counted as segments.ts counts them: a block's canonical
   * JSON, 4 characters a token). A request whose prompt is longer is answered as the real API does:
   * 400 invalid_request_error "prompt is too long: N tokens > M maximum". Default 200,000.
   */
  readonly windowTokens?: number;
  /** How many requests `requests` keeps (oldest dropped first). Default 1000. */
  readonly maxRecordedRequests?: number;
  readonly logger?: OfflineModelLogger;
}

export interface OfflineModel {
  /** Base URL for the SDK: `new Anthropic({ baseURL: model.url, apiKey: "offline" })`. */
  readonly url: string;
  readonly scenarios: ScenarioRegistry;
  /** Every request received, oldest first (for tests). */
  readonly requests: ReadonlyArray<RecordedRequest>;
  close(): Promise<void>;
}

export async function startOfflineModel(opts: OfflineModelOptions = {}): Promise<OfflineModel> {
  for (const key of ["ttftMs", "tokensPerSecond", "windowTokens"] as const) {
    const value = opts[key];
    if (value !== undefined && !(value >= 0)) throw invalidArgument(key, `must be a number >= 0, got ${value}`);
  }
  const logger = opts.logger ?? silentLogger;
  const registry = opts.scenarios instanceof ScenarioRegistry ? opts.scenarios : new ScenarioRegistry(opts.scenarios);
  if (opts.scenarioFile !== undefined) for (const s of await loadScenarioFile(opts.scenarioFile)) registry.add(s);
  const recorder = new Recorder(opts.maxRecordedRequests);
  const closing = new AbortController();
  // Every request in flight listens on it (removed when the request ends): past 10 at once Node
  // warned of a leak that is none, in benchmarks of 16 and 64 sessions.
  setMaxListeners(0, closing.signal);
  const app = Fastify({ logger: false, bodyLimit: MAX_REQUEST_BYTES, forceCloseConnections: true });

  app.setNotFoundHandler((req, reply) => {
    const id = requestId();
    return reply.code(404).header("request-id", id).send(errorBody("not_found_error", `Not found: ${req.method} ${req.url}`, id));
  });
  app.setErrorHandler((err: FastifyError, _req, reply) => {
    const status = err.statusCode ?? 500;
    const apiError =
      status === 413 ? new ApiError(413) : status >= 400 && status < 500 ? new ApiError(400, err.message) : new ApiError(500);
    if (apiError.status === 500) logger.error({ err }, "offline model: unexpected error");
    const id = requestId();
    return reply
      .code(apiError.status)
      .header("request-id", id)
      .send(errorBody(apiError.type, apiError.message, id));
  });
  app.get("/healthz", () => ({ status: "ok" }));
  registerMessagesRoutes(app, {
    registry,
    cache: new PromptCache(opts.cache),
    attempts: new AttemptCounter(),
    recorder,
    ttftMs: opts.ttftMs ?? 0,
    tokensPerSecond: opts.tokensPerSecond ?? 0,
    windowTokens: opts.windowTokens ?? DEFAULT_WINDOW_TOKENS,
    apiKey: opts.apiKey,
    logger,
    closing: closing.signal,
  });

  const host = opts.host ?? "127.0.0.1";
  try {
    await app.listen({ host, port: opts.port ?? 0 });
  } catch (err) {
    await app.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : (opts.port ?? 0);
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  logger.info({ url, scenarios: registry.names() }, "offline model listening");

  let closed: Promise<void> | undefined;
  return {
    url,
    scenarios: registry,
    get requests() {
      return recorder.records;
    },
    close: () => {
      closed ??= (async () => {
        closing.abort();
        await app.close();
      })();
      return closed;
    },
  };
}
