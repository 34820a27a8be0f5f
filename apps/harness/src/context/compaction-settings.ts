/**
 * The compaction strategy's numbers for one agent: its window (AgentConfig.context_window_tokens,
 * else the model's from model-windows.ts) and the fractions of it that decide when and how far
 * to compact. Kept in one place so the strategy, the loop and the docs agree.
 */
import type { AgentConfig } from "@metaharness/proto";
import { modelWindow } from "./model-windows.js";

export interface CompactionSettings {
  readonly windowTokens: number;
  /** A request estimated over this compacts first. */
  readonly thresholdTokens: number;
  /** Context editing alone is enough when it brings the request under this. */
  readonly lowWaterTokens: number;
  /** After a summary, the recent turns kept whole fit in this. */
  readonly keepRecentTokens: number;
  /** Tool results kept whole when older ones are cleared. */
  readonly keepToolResults: number;
  /** Compactions in a row without a message or tool call from the model before the turn ends. */
  readonly maxCompactionsPerTurn: number;
}

export const THRESHOLD = 0.8;
export const LOW_WATER = 0.5;
export const KEEP_RECENT = 0.25;
export const KEEP_TOOL_RESULTS = 3;
export const MAX_COMPACTIONS_PER_TURN = 3;

/** `modelMaximum`: the window the model itself stated in a "prompt is too long" error, when smaller. */
export function compactionSettings(agent: AgentConfig | undefined, modelMaximum?: number): CompactionSettings {
  const configured = agent?.contextWindowTokens ?? 0;
  const ours = configured > 0 ? configured : modelWindow(agent?.model ?? "");
  const windowTokens = modelMaximum !== undefined && modelMaximum > 0 ? Math.min(ours, modelMaximum) : ours;
  return {
    windowTokens,
    thresholdTokens: Math.floor(windowTokens * THRESHOLD),
    lowWaterTokens: Math.floor(windowTokens * LOW_WATER),
    keepRecentTokens: Math.floor(windowTokens * KEEP_RECENT),
    keepToolResults: KEEP_TOOL_RESULTS,
    maxCompactionsPerTurn: MAX_COMPACTIONS_PER_TURN,
  };
}
