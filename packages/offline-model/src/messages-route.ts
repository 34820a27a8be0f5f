/**
 * POST /v1/messages (also `?beta=true`) and POST /v1/messages/count_tokens. A request goes through
 * the real API's checks (headers, body), is matched to its scenario step, may be failed on purpose
 * (failFirst: an HTTP error, a dropped connection, or an error event mid-stream), is accounted
 * against the prompt cache, and is answered as JSON or as an event stream.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, DEFAULT_ERROR_MESSAGES, errorBody } from "./api-error.js";
import type { AttemptCounter } from "./attempts.js";
import { SCENARIO_HEADER } from "./conversation.js";
import { checkHeaders, header } from "./http-checks.js";
import { requestFingerprint, requestId as newRequestId } from "./ids.js";
import type { OfflineModelLogger } from "./logger.js";
import { Pacer, sleep } from "./pacing.js";
import { checkToolsExist, planMessage } from "./plan.js";
import type { PromptCache } from "./prompt-cache.js";
import { Recorder, type MutableRecord } from "./recorder.js";
import type { ScenarioRegistry } from "./registry.js";
import type { FailFirst } from "./scenario.js";
import { segmentsOf, totalTokens } from "./segments.js";
import { SseWriter } from "./sse-writer.js";
import { streamMessage } from "./stream-response.js";
import { resolveTurn, type Turn } from "./turn.js";
import { validateRequest } from "./validate.js";
import type { Message } from "./wire.js";

export interface ModelDeps {
  readonly registry: ScenarioRegistry;
  readonly cache: PromptCache;
  readonly attempts: AttemptCounter;
  readonly recorder: Recorder;
  readonly ttftMs: number;
  readonly tokensPerSecond: number;
  /** Longer prompts are refused with the real API's "prompt is too long" 400. */
  readonly windowTokens: number;
  readonly apiKey: string | undefined;
  readonly logger: OfflineModelLogger;
  /** Aborts when the server closes: streams and waits end at once. */
  readonly closing: AbortSignal;
}

interface Exchange {
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  readonly record: MutableRecord;
  readonly requestId: string;
  readonly signal: AbortSignal;
}

export function registerMessagesRoutes(app: FastifyInstance, deps: ModelDeps): void {
  app.post("/v1/messages", (req, reply) => handle(deps, req, reply, (x) => answerMessages(deps, x)));
  app.post("/v1/messages/count_tokens", (req, reply) =>
    handle(deps, req, reply, (x) => {
      checkHeaders(req.headers, deps.apiKey);
      const request = validateRequest(req.body, { requireMaxTokens: false });
      Recorder.finish(x.record, "ok", 200);
      return reply.code(200).header("request-id", x.requestId).send({ input_tokens: totalTokens(segmentsOf(request)) });
    }),
  );
}

/** Runs one exchange; an ApiError becomes the real API's error response. */
async function handle(
  deps: ModelDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  answer: (x: Exchange) => Promise<unknown> | FastifyReply,
): Promise<unknown> {
  const x: Exchange = {
    req,
    reply,
    record: deps.recorder.start(req.method, req.url, req.headers, req.body),
    requestId: newRequestId(),
    signal: exchangeSignal(reply, deps.closing),
  };
  try {
    return await answer(x);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    deps.logger.debug({ status: err.status, error: err.message, seq: x.record.seq }, "offline model: error response");
    Recorder.finish(x.record, "error", err.status);
    return reply
      .code(err.status)
      .headers({ ...err.headers, "request-id": x.requestId })
      .send(errorBody(err.type, err.message, x.requestId));
  }
}

/** Aborts when the client goes away before the response is finished, or when the server closes. */
function exchangeSignal(reply: FastifyReply, closing: AbortSignal): AbortSignal {
  const local = new AbortController();
  const onClosing = (): void => local.abort();
  closing.addEventListener("abort", onClosing, { once: true });
  reply.raw.on("close", () => {
    closing.removeEventListener("abort", onClosing);
    if (!reply.raw.writableFinished) local.abort();
  });
  return local.signal;
}

async function answerMessages(deps: ModelDeps, x: Exchange): Promise<unknown> {
  checkHeaders(x.req.headers, deps.apiKey);
  const request = validateRequest(x.req.body);
  const segments = segmentsOf(request);
  const promptTokens = totalTokens(segments);
  // The real API's wording, which clients parse for the two numbers.
  if (promptTokens > deps.windowTokens) throw new ApiError(400, `prompt is too long: ${promptTokens} tokens > ${deps.windowTokens} maximum`);
  const turn = resolveTurn(request, header(x.req.headers, SCENARIO_HEADER), deps.registry);
  x.record.scenario = turn.scenario;
  x.record.step = turn.stepIndex;
  checkToolsExist(request, turn.spec, turn.where);
  const fingerprint = requestFingerprint(request);
  const failure = failureDue(deps, x, turn, fingerprint);
  if (failure?.status === "network") {
    deps.logger.debug({ seq: x.record.seq, where: turn.where }, "offline model: dropping the connection");
    x.reply.hijack();
    x.req.raw.socket.destroy();
    Recorder.finish(x.record, "network");
    return undefined;
  }
  if (failure !== undefined && (failure.status !== "midstream_overloaded" || request.stream !== true)) {
    throw failureError(failure);
  }
  const message = planMessage({
    request,
    spec: turn.spec,
    fingerprint,
    inputUsage: deps.cache.account(request.model, segments),
    where: turn.where,
  });
  const ttftMs = turn.spec.ttftMs ?? deps.ttftMs;
  const tokensPerSecond = turn.spec.tokensPerSecond ?? deps.tokensPerSecond;
  if (request.stream === true) return sendStream(x, message, { ttftMs, tokensPerSecond, failure });
  return sendJson(x, message, new Pacer(ttftMs, tokensPerSecond, x.signal));
}

/** The step's failFirst, when this attempt (of this exact request at this step) is one to fail. */
function failureDue(deps: ModelDeps, x: Exchange, turn: Turn, fingerprint: string): FailFirst | undefined {
  const failFirst = turn.spec.failFirst;
  if (failFirst === undefined) return undefined;
  const attempt = deps.attempts.next(`${turn.scenario}\n${turn.stepIndex}\n${fingerprint}`);
  x.record.attempt = attempt;
  return attempt <= failFirst.times ? failFirst : undefined;
}

function failureError(failure: FailFirst): ApiError {
  // A non-streaming request cannot fail midstream; the real API answers it with a 529.
  const status = typeof failure.status === "number" ? failure.status : 529;
  const retryAfter = failure.retryAfterSeconds ?? (status === 429 ? 1 : undefined);
  const headers: Record<string, string> = retryAfter === undefined ? {} : { "retry-after": String(retryAfter) };
  return new ApiError(status, failure.message ?? DEFAULT_ERROR_MESSAGES[status], headers);
}

async function sendJson(x: Exchange, message: Message, pacer: Pacer): Promise<unknown> {
  if (!(await sleep(pacer.msUntilDone(message.usage.output_tokens), x.signal))) {
    x.reply.hijack();
    x.reply.raw.destroy();
    Recorder.finish(x.record, "aborted");
    return undefined;
  }
  Recorder.finish(x.record, "ok", 200);
  return x.reply.code(200).header("request-id", x.requestId).send(message);
}

interface StreamPlan {
  readonly ttftMs: number;
  readonly tokensPerSecond: number;
  readonly failure: FailFirst | undefined;
}

async function sendStream(x: Exchange, message: Message, plan: StreamPlan): Promise<undefined> {
  x.reply.hijack();
  const out = new SseWriter(x.reply.raw);
  out.open(x.requestId);
  const outcome = await streamMessage(out, message, {
    ttftMs: plan.ttftMs,
    tokensPerSecond: plan.tokensPerSecond,
    signal: x.signal,
    requestId: x.requestId,
    onFirstDelta: () => Recorder.firstDelta(x.record),
    ...(plan.failure === undefined ? {} : { midstreamOverloaded: plan.failure.message ?? "Overloaded" }),
  });
  out.end();
  Recorder.finish(x.record, outcome === "completed" ? "ok" : outcome, 200);
  return undefined;
}
