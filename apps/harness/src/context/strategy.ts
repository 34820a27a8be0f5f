/**
 * How a model request is built from the log. Pluggable: the default replays the history with
 * prompt-cache breakpoints; "windowed" keeps the request under a token budget. A strategy may
 * also offer the model tools of its own (e.g. to re-read slices of the log).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { AgentConfig, Event, ModelUsage } from "@metaharness/proto";
import type { StreamParams } from "@metaharness/model-client";
import type { LogPort } from "../log-port.js";

export interface ContextInput {
  readonly events: readonly Event[];
  readonly agent: AgentConfig | undefined;
  readonly tools: readonly Anthropic.Tool[];
}

export interface ContextStrategy {
  readonly name: string;
  build(input: ContextInput): StreamParams;
  /** Tools this strategy answers itself (not routed to a sandbox or the client). */
  readonly ownTools: readonly Anthropic.Tool[];
  /** A strategy that compacts (compaction.ts): the loop runs it before each model request. */
  readonly compaction?: Compactor;
  runOwnTool?(name: string, input: Record<string, unknown>, log: LogPort): Promise<{ output: string; isError: boolean }>;
}

export interface Compactor {
  /** Compactions in a row (without model output) after which the turn ends. */
  readonly maxInARow: number;
  /** Whether the next request needs a compaction first (it would pass the threshold). */
  needed(input: ContextInput): boolean;
  /**
   * The request `build` makes of `input` when it needs no compaction first, else undefined: what
   * `needed` decides on, so a request that fits is built and measured once, not again by `build`.
   */
  requestIfFits(input: ContextInput): StreamParams | undefined;
  /**
   * The compaction event to append; `force` compacts even under the threshold (the model said the
   * prompt is too long), to the maximum the model stated when it said so (`modelMaximum`).
   */
  run(
    input: ContextInput,
    force: boolean,
    summarize: (params: StreamParams) => Promise<{ text: string; usage: ModelUsage }>,
    modelMaximum?: number,
  ): Promise<Event | undefined>;
}
