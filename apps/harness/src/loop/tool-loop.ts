/**
 * The default harness: call the model, record its response, run its tool calls (routed by
 * tool-calls.ts), repeat until the turn ends. Every decision is taken from the log (state.ts nextStep), and every write goes
 * through the lease, so this loop can die at any moment and another instance picks up from the
 * last event: a model response is recorded whole or not at all (a crash mid-stream re-asks), and a
 * tool call re-executed after a crash is deduplicated by the broker on its tool_use id. When the
 * turn is over the loop keeps the session for a while (MH_IDLE_LINGER_MS, `linger`), so that its
 * next input starts the next turn without a new wake. In a
 * self-hosted environment the sandbox tools are the worker's: the loop keeps the session (running,
 * under its lease) until the worker's user.tool_result arrives, or answers the call with an error
 * once it has waited `workerToolTimeoutMs`.
 */
import { MhError } from "@metaharness/errors";
import { newEvent } from "@metaharness/events";
import { SpanStatusCode, withSpan, type Span } from "@metaharness/telemetry";
import { ModelError, type StreamHooks, type StreamResult } from "@metaharness/model-client";
import type { Event } from "@metaharness/proto";
import { horizonOf, readHorizon } from "../context/horizon.js";
import { strategyFor } from "../context/strategies.js";
import type { ContextInput, ContextStrategy } from "../context/strategy.js";
import { compactionLimitEvents, compactionsInARow, type CompactionLimit, isPromptTooLong, statedMaximum, summarize } from "./compact-step.js";
import { lastStatus, nextStep, userInputAfter, type NextStep, type PendingToolUse } from "../state.js";
import { limitsOf, type Limits } from "../budget.js";
import { DeltaForwarder } from "./deltas.js";
import { SessionEvents } from "./session-events.js";
import type { HarnessLoop, LoopContext } from "./harness-loop.js";
import { ToolRouter } from "./tool-calls.js";
import { RetryStatus, StopReasonType, idle, responseEvents, running, sessionError, toolResult } from "./turn-events.js";
import { TurnMeter, usageAttributes } from "./turn-meter.js";

export const DEFAULT_WORKER_TOOL_TIMEOUT_MS = 10 * 60_000;

export const toolLoop: HarnessLoop = {
  name: "tool-loop",
  run: (ctx) => new Driver(ctx).run(),
};

class Driver {
  private view: SessionEvents | undefined;
  /**
   * The running step's controller: aborted by an interrupt, and by the lease's end (stepEnds), so
   * that its signal alone stops the step. A composite (AbortSignal.any) of it and the lease's
   * signal per step, and a controller more per model request, cost 20-40 us each on Node 20 and
   * hung off the lease's signal until collected (issue 31).
   */
  private step: AbortController | undefined;
  /** Aborts the running step when the lease ends: one listener for the loop's life. */
  private readonly stepEnds = (): void => this.step?.abort(this.ctx.signal.reason);
  private readonly tools: ToolRouter;
  private readonly strategy: ContextStrategy;
  private readonly limits: Limits;
  private readonly meter: TurnMeter;
  /** Time the current model request spent compacting first (its summary requests are metered on their own). */
  private compactingMs = 0;

  constructor(private readonly ctx: LoopContext) {
    const agent = ctx.session.metadata?.agent;
    this.strategy = strategyFor(agent);
    this.limits = limitsOf(agent);
    this.meter = new TurnMeter(agent?.model || ctx.model.model, ctx.session.metadata?.tenant ?? "");
    this.tools = new ToolRouter(ctx, this.strategy, this.meter);
  }

  async run(): Promise<void> {
    // A compacting strategy's view starts at its horizon: the turn's cost is then bounded by
    // what the model sees, not by the log's length.
    await this.tools.addHandTools();
    // A short session's whole log came with the lease: the view starts at its first event.
    const from = this.strategy.compaction === undefined || this.ctx.log.holdsHistory ? 1 : await readHorizon(this.ctx.log);
    this.view = await SessionEvents.open(this.ctx, () => this.step?.abort(new MhError("CANCELLED", "interrupted")), this.limits, from);
    this.ctx.signal.addEventListener("abort", this.stepEnds, { once: true });
    try {
      while (!this.ctx.signal.aborted) {
        const seen = this.lastSeq();
        const step = nextStep(this.events, this.limits, this.tools.workerTools);
        if (step.kind === "call-model" || step.kind === "run-tools" || step.kind === "await-hands") this.meter.begin(this.events);
        // One span per step with something to do: its log appends, model request and tool calls
        // are its children (the gRPC clients carry the context), and the events it appends carry
        // its trace id. A settled step appends and calls nothing: no span (one a turn, after its idle).
        const more =
          !this.settled(step) &&
          (await withSpan(
            `harness.${step.kind}`,
            { "mh.session_id": this.ctx.log.sessionId, "mh.lease_epoch": this.ctx.leaseEpoch, "mh.last_seq": this.lastSeq() },
            (span) => this.perform(step, seen, span),
          ));
        if (!more && (step.kind === "stop" || !(await this.linger()))) return;
      }
    } finally {
      this.ctx.signal.removeEventListener("abort", this.stepEnds);
      this.view.close();
    }
  }

  /**
   * Nothing left to do: keeps the session (the lease, which the turn's last append set to run out
   * with the linger, lease-keeper.ts; the events; the follow of the log) for `idleLingerMs`, so that its next input (a message, a
   * custom tool's result, a confirmation, an interrupt) arrives on the follow and is decided on at
   * once, with no Wake taking a lease, no read and no new follow. True when something arrived to
   * decide on; false when the linger ran out or the lease went (shutdown, lost), or when the
   * session's agent changed (a session.updated naming it: the configuration is read with the
   * lease, so a fresh wake reads it).
   */
  private async linger(): Promise<boolean> {
    const lingerMs = this.ctx.idleLingerMs ?? 0;
    if (lingerMs <= 0 || this.ctx.signal.aborted || this.view === undefined) return false;
    // Changed during the turn, after the lease's read of the configuration: not kept either.
    if (this.agentChanged()) return false;
    const seen = this.lastSeq();
    this.ctx.lingering?.start(lingerMs);
    let how: "resumed" | "ran out" | "ended" = "ended";
    try {
      await this.view.changed(seen, this.ctx.signal, lingerMs);
      if (this.ctx.signal.aborted) how = "ended";
      else if (this.lastSeq() <= seen) how = "ran out";
      else how = this.agentChanged() ? "ended" : "resumed";
    } finally {
      this.ctx.lingering?.stop(how);
    }
    if (how !== "resumed") return false;
    // What a fresh wake would find out again: which sandbox is the session's default (one may
    // have been handed to it or away since, POST .../sandbox/transfer) and which hand tools are
    // connected now.
    this.ctx.sandbox?.forget();
    await this.tools.addHandTools();
    return true;
  }

  /**
   * Whether a session.updated named the agent after the configuration this loop runs with was
   * read (with the lease: the session's row as of its last_seq then).
   */
  private agentChanged(): boolean {
    const readAt = this.ctx.session.lastSeq;
    return this.events.some((e) => e.seq > readAt && e.payload?.$case === "sessionUpdated" && e.payload.value.agent !== undefined);
  }

  private get events(): Event[] {
    return this.view?.events ?? [];
  }

  private lastSeq(): number {
    return this.view?.lastSeq() ?? 0;
  }

  private async append(...events: Event[]): Promise<void> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    await this.view.append(...events);
    this.meter.appended(events);
  }

  /** Appends events that end the turn, unless the log moved past `seen` (see appendAt). */
  private async appendAt(seen: number, ...events: Event[]): Promise<boolean> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    const appended = await this.view.appendAt(seen, ...events);
    if (appended) this.meter.appended(events);
    return appended;
  }

  private async ensureRunning(): Promise<void> {
    await this.append(...this.runningIfIdle());
  }

  /** session.status_running, unless the session already is: to lead the step's first append. */
  private runningIfIdle(): Event[] {
    return lastStatus(this.events)?.payload?.$case === "sessionStatusRunning" ? [] : [running()];
  }

  /**
   * Whether `step` has nothing to do: the session is terminated, or the log ends with the idle a
   * done or wait step would append (the same tool uses awaited) and no user input after it.
   */
  private settled(step: NextStep): boolean {
    if (step.kind === "stop") return true;
    if (step.kind !== "done" && step.kind !== "wait") return false;
    const status = lastStatus(this.events);
    if (status?.payload?.$case !== "sessionStatusIdle" || userInputAfter(this.events, status)) return false;
    return step.kind === "done" || (status.payload.value.stopReason?.eventIds ?? []).join() === step.eventIds.join();
  }

  /**
   * Performs one step, decided on the log up to `seen`; false when the session has nothing more
   * to do for now. A step that ends the turn appends only if nothing arrived since `seen`, and
   * otherwise goes round again (true) to decide with what arrived.
   */
  private async perform(step: NextStep, seen: number, span: Span): Promise<boolean> {
    switch (step.kind) {
      case "stop":
        return false;
      case "done": {
        if (this.settled(step)) return false;
        // Not idle yet; or idle, with user input that needed no work since (an interrupt while
        // idle): acknowledged, so the log no longer says the session awaits a harness.
        const status = lastStatus(this.events)?.payload;
        const type = status?.$case === "sessionStatusIdle" ? status.value.stopReason?.type : undefined;
        return !(await this.appendAt(seen, idle(type ?? StopReasonType.STOP_REASON_TYPE_END_TURN)));
      }
      case "wait":
        if (this.settled(step)) return false;
        return !(await this.appendAt(seen, idle(StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION, step.eventIds)));
      case "budget":
        await this.appendAt(seen, idle(StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED));
        return true;
      case "interrupt":
        await this.appendAt(
          seen,
          ...step.unanswered.map((t) => toolResult(t.event.id, "interrupted by the user before it finished", true)),
          idle(StopReasonType.STOP_REASON_TYPE_INTERRUPTED),
        );
        return true;
      case "run-tools":
        await this.ensureRunning();
        await this.runTools(step.tools, seen);
        return true;
      case "await-hands":
        await this.ensureRunning();
        await this.awaitHands(step.tools, seen);
        return true;
      case "call-model":
        await this.callModel(span, seen);
        return true;
    }
  }

  /**
   * The abort controller of a step decided on the log up to `seen`: already aborted if an
   * interrupt arrived since (while the step's first append was on its way, the previous step's
   * controller was the one the interrupt aborted), or if the lease is gone; later aborted by
   * either (onInterrupt, stepEnds).
   */
  private newStep(seen: number): AbortController {
    const step = new AbortController();
    this.step = step;
    if (this.events.some((e) => e.seq > seen && e.payload?.$case === "userInterrupt")) step.abort(new MhError("CANCELLED", "interrupted"));
    else if (this.ctx.signal.aborted) step.abort(this.ctx.signal.reason);
    return step;
  }

  private async runTools(tools: readonly PendingToolUse[], seen: number): Promise<void> {
    await this.tools.run(tools, this.newStep(seen).signal, (...events) => this.append(...events));
  }

  /**
   * Waits for the worker's results (or an interrupt, or anything else appended), then lets the
   * log decide again. A call that waited `workerToolTimeoutMs` since it could run is answered
   * with an error, so a session without a polling worker ends its turn instead of hanging.
   */
  private async awaitHands(tools: readonly PendingToolUse[], seen: number): Promise<void> {
    const timeoutMs = this.ctx.workerToolTimeoutMs ?? DEFAULT_WORKER_TOOL_TIMEOUT_MS;
    const now = Date.now();
    const due = (t: PendingToolUse): number => (t.readyAt?.getTime() ?? now) + timeoutMs;
    const overdue = tools.filter((t) => due(t) <= now);
    if (overdue.length > 0) {
      const environment = this.ctx.session.metadata?.environmentId ?? "";
      const why = `no worker of the self-hosted environment ${environment} answered this tool call within ${Math.round(timeoutMs / 1000)} s; is an EnvironmentWorker polling it?`;
      await this.append(...overdue.map((t) => toolResult(t.event.id, why, true)));
      return;
    }
    const step = this.newStep(seen);
    const wait = Math.min(...tools.map(due)) - now;
    const began = Date.now();
    try {
      await this.view?.changed(this.lastSeq(), step.signal, wait);
    } finally {
      this.meter.waited(Date.now() - began);
    }
  }

  private async callModel(span: Span, seen: number): Promise<void> {
    const start = newEvent("span.model_request_start", { model: this.ctx.session.metadata?.agent?.model || this.ctx.model.model });
    const tools = this.tools.definitions();
    const input = (): ContextInput => ({ events: this.events, agent: this.ctx.session.metadata?.agent, tools });
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
    const step = this.newStep(seen);
    const { signal } = step;
    const started = this.appendAt(this.lastSeq(), ...this.runningIfIdle(), start).then(
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
          failed === undefined ? this.append(sessionError(error.errorType, `${error.message}; retrying in ${delayMs} ms`, RetryStatus.RETRY_STATUS_RETRYING)) : undefined,
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
      const decidedAt = this.lastSeq();
      const final = message.stop_reason !== "tool_use" && !this.inputSinceStart(start.id);
      if (!final || !(await this.appendAt(decidedAt, ...response, idle(StopReasonType.STOP_REASON_TYPE_END_TURN)))) await this.append(...response);
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
        await this.append(end); // an interrupt: the next step records it
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
      if (this.inputSinceStart(start.id) || !(await this.appendAt(this.lastSeq(), ...failure, idle(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED)))) await this.append(...failure);
    }
  }

  /**
   * Compacts before the request when the strategy says it is needed (or `force`: the model said
   * the prompt is too long); false when the turn ended at the compaction limit instead.
   */
  private async compactFirst(startId: string, input: () => ContextInput, force: boolean, signal: AbortSignal, modelMaximum?: number): Promise<boolean> {
    const compaction = this.strategy.compaction;
    if (compaction === undefined || (!force && !compaction.needed(input()))) return true;
    if (compactionsInARow(this.events) >= compaction.maxInARow) {
      await this.endAtCompactionLimit(startId, { inARow: compaction.maxInARow });
      return false;
    }
    const began = Date.now();
    try {
      const event = await compaction.run(input(), force, (params) => summarize(this.ctx.model, params, signal, this.meter, this.ctx.log.sessionId), modelMaximum);
      if (event !== undefined) {
        await this.append(event);
        this.view?.dropBefore(horizonOf(this.events));
      }
      return true;
    } finally {
      this.compactingMs += Date.now() - began;
    }
  }

  /**
   * Ends the turn, as a failed request does (callModel): input that came after the request's start
   * (while it compacted and asked again) is not answered by this idle, which would mark it so; the
   * next step takes it up.
   */
  private async endAtCompactionLimit(startId: string, limit: CompactionLimit): Promise<void> {
    const ended = compactionLimitEvents(startId, limit);
    if (this.inputSinceStart(startId) || !(await this.appendAt(this.lastSeq(), ...ended))) await this.append(...ended.slice(0, -1));
  }

  /** Whether user input came after a model request's start: the request did not see it. */
  private inputSinceStart(startId: string): boolean {
    const startSeq = this.events.find((e) => e.id === startId)?.seq ?? this.lastSeq();
    return this.events.some((e) => e.seq > startSeq && e.type.startsWith("user."));
  }
}

/** Why a model request was abandoned before its start landed: input came first (decided again). Made once. */
const INPUT_CAME_FIRST = new MhError("ABORTED", "input came before the model request's start was recorded; deciding again");
