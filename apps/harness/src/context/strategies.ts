/**
 * Which context strategy a session uses, by the name in its agent configuration: replay when it
 * names none (sessions made by the gateway name "compaction").
 */
import type { AgentConfig } from "@metaharness/proto";
import { compactionStrategy } from "./compaction.js";
import { replayStrategy } from "./replay.js";
import type { ContextStrategy } from "./strategy.js";
import { windowedStrategy } from "./windowed.js";

export const STRATEGIES: ReadonlyMap<string, ContextStrategy> = new Map(
  [replayStrategy, windowedStrategy, compactionStrategy].map((s) => [s.name, s]),
);

export function strategyFor(agent: AgentConfig | undefined): ContextStrategy {
  return STRATEGIES.get(agent?.contextStrategy || "replay") ?? replayStrategy;
}
