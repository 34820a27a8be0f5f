/**
 * A step's model request for the default loop (tool-loop.ts), and the ways it ends the turn: its
 * start recorded while the request is already out, compaction first when the context strategy
 * says so (or the model says the prompt is too long), the response recorded (with the turn's
 * idle when it is a final answer), or the turn ended by its failure or at the compaction limit;
 * input that came after the request's start is never marked answered by such an idle.
 */
import { MhError } from "@metaharness/errors";
import { newEvent } from "@metaharness/events";
import { ModelError, type StreamHooks, type StreamResult } from "@metaharness/model-client";
import type { Event } from "@metaharness/proto";
import { SpanStatusCode, type Span } from "@metaharness/telemetry";
import { horizonOf } from "../context/horizon.js";
import type { ContextInput, ContextStrategy } from "../context/strategy.js";
import { compactionLimitEvents, compactionsInARow, type CompactionLimit, isPromptTooLong, statedMaximum, summarize } from "./compact-step.js";
import { DeltaForwarder } from "./deltas.js";
import type { LoopContext } from "./harness-loop.js";
import type { ToolRouter } from "./tool-calls.js";
import { RetryStatus, StopReasonType, idle, responseEvents, sessionError } from "./turn-events.js";
import { usageAttributes, type TurnMeter } from "./turn-meter.js";

/** What a model request needs of the loop making it: the session's events, and appends the turn's meter counts. */
export interface TurnEvents {
  readonly events: Event[];
  lastSeq(): number;
  append(...events: Event[]): Promise<void>;
  /** Appends, unless the log moved past `seen`: false then, and nothing appended. */
  appendAt(seen: number, ...events: Event[]): Promise<boolean>;
  /** session.status_running, unless the session already is: to lead the step's first append. */
  runningIfIdle(): Event[];
  /** Forgets the events before `seq` (a compaction's horizon). */
  dropBefore(seq: number): void;
}

export class ModelCaller {
  /** Time the current model request spent compacting first (its summary requests are metered on their own). */
  private compactingMs = 0;

  constructor(
    private readonly ctx: Pick<LoopContext, "session" | "model" | "log" | "logger" | "signal">,
    private readonly turn: TurnEvents,
    private readonly strategy: ContextStrategy,
    private readonly tools: Pick<ToolRouter, "definitions" | "routes">,
    private readonly meter: TurnMeter,
  ) {}

  /**
   * Makes the model request of a step whose controller is `step`, records its response (with the
   * turn's idle when it is a final answer) or ends the turn as it failed.
   */
  async call(span: Span, step: AbortController): Promise<void> {
    const start = newEvent("span.model_request_start", { model: this.ctx.session.metadata?.agent?.model || this.ctx.model.model });
    const tools = this.tools.definitions();
    const input = (): ContextInput => ({ events: this.turn.events, agent: this.ctx.session.metadata?.agent, tools });
    // The request goes to the model while its bookkeeping (the status, if it changes, and the span
    // start: one append) is on its way to the log, not after it: the model's own TTFT is the
    // longer of the two. Nothing the model says is acted on, nor shown, before that append lands
    // (the deltas wait for it, the response is recorded after it), and if it fails (the lease was
    // taken over) the request is abandoned: a crash in between leaves the log as a crash
    // mid-stream does, with no recorded start, and the next holder asks again. A step that must
    // compact first appends first, so its events keep their order. The start lands only where the
    // log still ends at the events the request is built from: input that landed first would stand
    // before the start, where the log says the request saw it (state.ts), and the turn's idle
    // would leave it unanswered; then the request is abandoned and the step decided again.
    // The step's signal stops the request: an interrupt, the lease's end, or its start refused.
    const { signal } = step;
    const started = this.turn.appendAt(this.turn.lastSeq(), ...this.turn.runningIfIdle(), start).then(
      (landed) => {
        if (landed) return undefined;
        step.abort(INPUT_CAME_FIRST);
        return INPUT_CAME_FIRST;
      },
      (err: unknown) => {
        step.abort(err);
        return MhError.from(err);
      },
    );
    const startFailure = async (): Promise<MhError | undefined> => started;
    // A compacting strategy decides on the request it would send: built once when it fits.
    const fits = this.strategy.compaction?.requestIfFits(input());
    const compact = this.strategy.compaction !== undefined && fits === undefined;
    if (compact) {
      const failed = await startFailure();
      if (failed === INPUT_CAME_FIRST) return;
      if (failed !== undefined) throw failed;
    }
    const deltas = new DeltaForwarder(this.ctx.log, start.id, this.ctx.logger, started.then((failed) => failed === undefined));
    const retries: Promise<void>[] = [];
    const hooks: StreamHooks = {
      signal,
      onTextDelta: (t, i) => deltas.text(t, i),
      onThinkingDelta: (t, i) => deltas.thinking(t, i),
      onInputJsonDelta: (t, i) => deltas.inputJson(t, i),
      onAttemptDiscarded: () => undefined,
      onRetry: ({ error, delayMs }) => {
        this.meter.retry(error.errorType);
        const notice = started.then((failed) =>
          failed === undefined ? this.turn.append(sessionError(error.errorType, `${error.message}; retrying in ${delayMs} ms`, RetryStatus.RETRY_STATUS_RETRYING)) : undefined,
        );
        // Awaited below, once the stream ends; until then a refusal (the lease taken over, the
        // session terminated) must not count as unhandled, which would end the whole process.
        notice.catch(() => undefined);
        retries.push(notice);
      },
    };
    const began = Date.now();
    this.compactingMs = 0;
    try {
      if (compact && !(await this.compactFirst(start.id, input, false, signal))) return;
      let result: StreamResult;
      try {
        // Nothing ran between the decision and here unless it compacted (the events are as they were).
        result = await this.ctx.model.streamMessage(fits ?? this.strategy.build(input()), hooks);
      } catch (err) {
        // The model counts otherwise than our estimate: compact anyway, and retry once.
        if (!isPromptTooLong(err) || this.strategy.compaction === undefined || signal.aborted) throw err;
        this.ctx.logger.info({ sessionId: this.ctx.log.sessionId, err: MhError.from(err) }, "the model says the prompt is too long; compacting and retrying once");
        if (!(await this.compactFirst(start.id, input, true, signal, statedMaximum(err)))) return;
        try {
          result = await this.ctx.model.streamMessage(this.strategy.build(input()), hooks);
        } catch (again) {
          if (!isPromptTooLong(again)) throw again;
          await this.endAtCompactionLimit(start.id, "still-too-long");
          return;
        }
      }
      const failed = await startFailure();
      if (failed === INPUT_CAME_FIRST) return;
      if (failed !== undefined) throw failed;
      const { message, ttftMs, attempts } = result;
      this.meter.modelRequest(Date.now() - began - this.compactingMs, { ttftMs, usage: message.usage });
      await Promise.all(retries);
      // What is left of the deltas goes with the response's append below.
      await deltas.handOver();
      span.setAttributes({
        "gen_ai.request.model": message.model,
        ...usageAttributes(message.usage),
        "mh.model.ttft_ms": ttftMs,
        "mh.model.attempts": attempts,
        "mh.model.stop_reason": message.stop_reason ?? "",
      });
      const response = responseEvents(message, start.id, this.tools.routes);
      // A final answer closes the turn in the same append, unless input arrived while it streamed
      // (or arrives before the append lands): then the next step answers it.
      const decidedAt = this.turn.lastSeq();
      const final = message.stop_reason !== "tool_use" && !this.inputSinceStart(start.id);
      if (!final || !(await this.turn.appendAt(decidedAt, ...response, idle(StopReasonType.STOP_REASON_TYPE_END_TURN)))) await this.turn.append(...response);
    } catch (err) {
      // The start's append failed (the lease is gone, or the log refused it): that is the error,
      // whatever the abandoned request answered.
      const failed = await startFailure();
      await Promise.allSettled(retries);
      await deltas.flush();
      if (failed === INPUT_CAME_FIRST) return;
      if (failed !== undefined) throw failed;
      if (this.ctx.signal.aborted) throw err;
      const e = MhError.from(err);
      const end = newEvent("span.model_request_end", { modelRequestStartId: start.id, isError: true, modelUsage: undefined, stopReason: "" });
      if (e.code === "CANCELLED") {
        await this.turn.append(end); // an interrupt: the next step records it
        return;
      }
      const type = err instanceof ModelError ? err.errorType : "unknown_error";
      this.meter.modelRequest(Date.now() - began - this.compactingMs, { failure: type });
      this.ctx.logger.warn({ err: e, sessionId: this.ctx.log.sessionId }, "model request failed; ending the turn");
      // The step failed though it ends normally (with session.error): its span says so, where the
      // session page's link for that event lands.
      span.recordException(e);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${type}: ${e.message}` });
      span.setAttribute("error.type", type);
      const failure = [end, sessionError(type, e.message, RetryStatus.RETRY_STATUS_EXHAUSTED)];
      // As a final answer (above): input that came while the request was out is not answered by
      // this failure, whose idle would mark it so (no harness would then take it up); the next
      // step asks the model with it.
      if (this.inputSinceStart(start.id) || !(await this.turn.appendAt(this.turn.lastSeq(), ...failure, idle(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED)))) await this.turn.append(...failure);
    }
  }

  /**
   * Compacts before the request when the strategy says it is needed (or `force`: the model said
   * the prompt is too long); false when the turn ended at the compaction limit instead.
   */
  private async compactFirst(startId: string, input: () => ContextInput, force: boolean, signal: AbortSignal, modelMaximum?: number): Promise<boolean> {
    const compaction = this.strategy.compaction;
    if (compaction === undefined || (!force && !compaction.needed(input()))) return true;
    if (compactionsInARow(this.turn.events) >= compaction.maxInARow) {
      await this.endAtCompactionLimit(startId, { inARow: compaction.maxInARow });
      return false;
    }
    const began = Date.now();
    try {
      const event = await compaction.run(input(), force, (params) => summarize(this.ctx.model, params, signal, this.meter, this.ctx.log.sessionId), modelMaximum);
      if (event !== undefined) {
        await this.turn.append(event);
        this.turn.dropBefore(horizonOf(this.turn.events));
      }
      return true;
    } finally {
      this.compactingMs += Date.now() - began;
    }
  }

  /**
   * Ends the turn, as a failed request does (call): input that came after the request's start
   * (while it compacted and asked again) is not answered by this idle, which would mark it so; the
   * next step takes it up.
   */
  private async endAtCompactionLimit(startId: string, limit: CompactionLimit): Promise<void> {
    const ended = compactionLimitEvents(startId, limit);
    if (this.inputSinceStart(startId) || !(await this.turn.appendAt(this.turn.lastSeq(), ...ended))) await this.turn.append(...ended.slice(0, -1));
  }

  /** Whether user input came after a model request's start: the request did not see it. */
  private inputSinceStart(startId: string): boolean {
    const startSeq = this.turn.events.find((e) => e.id === startId)?.seq ?? this.turn.lastSeq();
    return this.turn.events.some((e) => e.seq > startSeq && e.type.startsWith("user."));
  }
}

/** Why a model request was abandoned before its start landed: input came first (decided again). Made once. */
const INPUT_CAME_FIRST = new MhError("ABORTED", "input came before the model request's start was recorded; deciding again");
