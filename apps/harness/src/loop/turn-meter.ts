/**
 * The harness's metrics of one session's turns (their meaning: docs/operations.md): each model
 * request (duration, time to first token, retries, tokens by tenant), each tool call, and each
 * turn, from the user's event that started it to the idle status that ends it, with the part of
 * it that was neither the model nor a tool: the platform's overhead. Labels are the model, the
 * tenant, a built-in tool's name and closed outcomes: never a session id, nor a name a user chose
 * (an MCP tool counts as `mcp`).
 */
import { METRICS, counter, histogram, upDownCounter } from "@metaharness/telemetry";
import type { Event } from "@metaharness/proto";
import { StopReasonType } from "./turn-events.js";

const modelDuration = histogram(METRICS.modelDuration);
const ttft = histogram(METRICS.ttft);
const retries = counter(METRICS.modelRetries);
const tokens = histogram(METRICS.tokens);
const turnDuration = histogram(METRICS.turnDuration);
const overhead = histogram(METRICS.overhead);
const toolCalls = counter(METRICS.toolCalls);
/** Sessions this harness drives: the supervisor adds and removes them. */
export const sessionsActive = upDownCounter(METRICS.sessionsActive);
export const sessionsLingering = upDownCounter(METRICS.sessionsLingering);

const CHAT = { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic" } as const;

export interface ModelUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_input_tokens?: number | null | undefined;
  readonly cache_creation_input_tokens?: number | null | undefined;
}

/** A request's tokens as span attributes, as the SDK's own span of the request counts them: input includes the cache's. */
export function usageAttributes(u: ModelUsage): Record<string, number> {
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  return {
    "gen_ai.usage.input_tokens": u.input_tokens + cacheRead + cacheWrite,
    "gen_ai.usage.cache_read.input_tokens": cacheRead,
    "gen_ai.usage.cache_write.input_tokens": cacheWrite,
    "gen_ai.usage.output_tokens": u.output_tokens,
  };
}

export type ToolOutcomeLabel = "ok" | "error" | "denied";

export class TurnMeter {
  private turn: { startedAt: number; busyMs: number } | undefined;

  constructor(
    private readonly model: string,
    private readonly tenant: string,
  ) {}

  /** A step that works for the turn: starts it, at the user event that asked for it if one did. */
  begin(events: readonly Event[]): void {
    if (this.turn !== undefined) return;
    const now = Date.now();
    const asked = events.findLast((e) => e.type.startsWith("user."))?.createdAt?.getTime();
    this.turn = { startedAt: asked !== undefined && asked <= now ? asked : now, busyMs: 0 };
  }

  /** A model request (a compaction's summary request is one too) that took `ms`; `failure`: its error type. */
  modelRequest(ms: number, outcome: { ttftMs: number; usage: ModelUsage } | { failure: string }): void {
    if (this.turn !== undefined) this.turn.busyMs += ms;
    const model = { ...CHAT, "gen_ai.request.model": this.model };
    if ("failure" in outcome) {
      modelDuration.record(ms / 1000, { ...model, "error.type": outcome.failure });
      return;
    }
    modelDuration.record(ms / 1000, model);
    ttft.record(outcome.ttftMs / 1000, model);
    const u = outcome.usage;
    const counts = { input: u.input_tokens, output: u.output_tokens, cache_read: u.cache_read_input_tokens ?? 0, cache_creation: u.cache_creation_input_tokens ?? 0 };
    for (const [type, n] of Object.entries(counts)) tokens.record(n, { ...model, "gen_ai.token.type": type, tenant: this.tenant });
  }

  retry(errorType: string): void {
    retries.add(1, { "gen_ai.request.model": this.model, "error.type": errorType });
  }

  /** A tool call, by its label (toolLabel), that kept the turn `ms`. */
  toolCall(tool: string, kind: string, outcome: ToolOutcomeLabel, ms: number): void {
    if (this.turn !== undefined) this.turn.busyMs += ms;
    toolCalls.add(1, { "gen_ai.tool.name": tool, tool_kind: kind, outcome });
  }

  /** Time the turn waited on a self-hosted environment's worker (its tools' time). */
  waited(ms: number): void {
    if (this.turn !== undefined) this.turn.busyMs += ms;
  }

  /** Events were appended: one that sets the session idle ends the turn. */
  appended(events: readonly Event[]): void {
    const idle = events.find((e) => e.payload?.$case === "sessionStatusIdle");
    if (idle === undefined || this.turn === undefined || idle.payload?.$case !== "sessionStatusIdle") return;
    const ms = Date.now() - this.turn.startedAt;
    const type = idle.payload.value.stopReason?.type ?? StopReasonType.STOP_REASON_TYPE_END_TURN;
    const stopReason = (StopReasonType[type] ?? "unknown").replace(/^STOP_REASON_TYPE_/, "").toLowerCase();
    turnDuration.record(ms / 1000, { "gen_ai.request.model": this.model, stop_reason: stopReason });
    overhead.record(Math.max(0, ms - this.turn.busyMs) / 1000, { "gen_ai.request.model": this.model });
    this.turn = undefined;
  }
}
