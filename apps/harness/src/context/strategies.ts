/**
 * Which context strategy a session uses, by the name in its agent configuration.
 */
import type { AgentConfig } from "@metaharness/proto";
import { replayStrategy } from "./replay.js";
import type { ContextStrategy } from "./strategy.js";
import { windowedStrategy } from "./windowed.js";

const STRATEGIES: ReadonlyMap<string, ContextStrategy> = new Map([[replayStrategy.name, replayStrategy], [windowedStrategy.name, windowedStrategy]]);

export function strategyFor(agent: AgentConfig | undefined): ContextStrategy {
  return STRATEGIES.get(agent?.contextStrategy || "replay") ?? replayStrategy;
}
