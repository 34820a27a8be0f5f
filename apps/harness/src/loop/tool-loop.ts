/**
 * The default harness: call the model (model-call.ts, which records its response or ends the turn
 * as it failed), run its tool calls (routed by tool-calls.ts), repeat until the turn ends. Every
 * decision is taken from the log (state.ts nextStep), and every write goes through the lease, so
 * this loop can die at any moment and another instance picks up from the last event: a model
 * response is recorded whole or not at all (a crash mid-stream re-asks), and a tool call
 * re-executed after a crash is deduplicated by the broker on its tool_use id. When the turn is
 * over the loop keeps the session for a while (MH_IDLE_LINGER_MS, `linger`), so that its next
 * input starts the next turn without a new wake. In a self-hosted environment the sandbox tools
 * are the worker's: the loop keeps the session (running, under its lease) until the worker's
 * user.tool_result arrives, or answers the call with an error once it has waited
 * `workerToolTimeoutMs`.
 */
import { MhError } from "@metaharness/errors";
import { withSpan, type Span } from "@metaharness/telemetry";
import type { Event } from "@metaharness/proto";
import { readHorizon } from "../context/horizon.js";
import { strategyFor } from "../context/strategies.js";
import type { ContextStrategy } from "../context/strategy.js";
import { lastStatus, neverRan, nextStep, userInputAfter, type NextStep, type PendingToolUse } from "../state.js";
import { limitsOf, type Limits } from "../budget.js";
import { ModelCaller, type TurnEvents } from "./model-call.js";
import { SessionEvents } from "./session-events.js";
import type { HarnessLoop, LoopContext } from "./harness-loop.js";
import { ToolRouter } from "./tool-calls.js";
import { StopReasonType, idle, running, toolResult } from "./turn-events.js";
import { TurnMeter } from "./turn-meter.js";

export const DEFAULT_WORKER_TOOL_TIMEOUT_MS = 10 * 60_000;

export const toolLoop: HarnessLoop = {
  name: "tool-loop",
  run: (ctx) => new Driver(ctx).run(),
};

class Driver implements TurnEvents {
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
  private readonly model: ModelCaller;

  constructor(private readonly ctx: LoopContext) {
    const agent = ctx.session.metadata?.agent;
    this.strategy = strategyFor(agent);
    this.limits = limitsOf(agent);
    this.meter = new TurnMeter(agent?.model || ctx.model.model, ctx.session.metadata?.tenant ?? "");
    this.tools = new ToolRouter(ctx, this.strategy, this.meter);
    this.model = new ModelCaller(ctx, this, this.strategy, this.tools, this.meter);
  }

  async run(): Promise<void> {
    // A compacting strategy's view starts at its horizon: the turn's cost is then bounded by
    // what the model sees, not by the log's length.
    await this.tools.addHandTools();
    // A short session's whole log came with the lease: the view starts at its first event.
    const from = this.strategy.compaction === undefined || this.ctx.log.holdsHistory ? 1 : await readHorizon(this.ctx.log);
    this.view = await SessionEvents.open(this.ctx, () => this.step?.abort(new MhError("CANCELLED", "interrupted")), this.limits, from);
    await this.view.inputLanding(this.ctx.awaitInputMs, this.ctx.signal);
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

  get events(): Event[] {
    return this.view?.events ?? [];
  }

  lastSeq(): number {
    return this.view?.lastSeq() ?? 0;
  }

  dropBefore(seq: number): void {
    this.view?.dropBefore(seq);
  }

  async append(...events: Event[]): Promise<void> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    await this.view.append(...events);
    this.meter.appended(events);
  }

  /** Appends events that end the turn, unless the log moved past `seen` (see appendAt). */
  async appendAt(seen: number, ...events: Event[]): Promise<boolean> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    const appended = await this.view.appendAt(seen, ...events);
    if (appended) this.meter.appended(events);
    return appended;
  }

  private async ensureRunning(): Promise<void> {
    await this.append(...this.runningIfIdle());
  }

  /** session.status_running, unless the session already is: to lead the step's first append. */
  runningIfIdle(): Event[] {
    return lastStatus(this.events)?.payload?.$case === "sessionStatusRunning" ? [] : [running()];
  }

  /**
   * Whether `step` has nothing to do: the session is terminated, or the log ends with the idle a
   * done or wait step would append (the same tool uses awaited) and no user input after it.
   */
  private settled(step: NextStep): boolean {
    if (step.kind === "stop") return true;
    if (step.kind !== "done" && step.kind !== "wait") return false;
    if (step.kind === "done" && neverRan(this.events)) return true;
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
        await this.model.call(span, this.newStep(seen));
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
}
