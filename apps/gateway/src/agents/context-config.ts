/**
 * An agent's context management, which the SDK's agent has no field for: two documented metadata
 * keys (docs/harness.md, "Context management"). `mh.context_strategy` is compaction (the default),
 * windowed or replay; `mh.context_window_tokens` overrides the model's window (the harness's table,
 * apps/harness/src/context/model-windows.ts). Checked when the agent is created or updated, so a
 * bad value is refused naming its key and stores nothing.
 */
import { invalidRequest } from "../errors/api-error.js";
import type { Metadata } from "../http/metadata.js";

export const STRATEGY_KEY = "mh.context_strategy";
export const WINDOW_KEY = "mh.context_window_tokens";
export const CONTEXT_STRATEGIES = ["compaction", "windowed", "replay"] as const;
export const DEFAULT_CONTEXT_STRATEGY = "compaction";
/** Below this no request of an agent fits (system prompt, tools and one turn). */
export const MIN_WINDOW_TOKENS = 1_000;
const MAX_WINDOW_TOKENS = 10_000_000;

export interface ContextConfig {
  readonly contextStrategy: string;
  readonly contextWindowTokens: number;
}

export function contextConfig(metadata: Metadata): ContextConfig {
  const strategy = metadata[STRATEGY_KEY] ?? DEFAULT_CONTEXT_STRATEGY;
  if (!(CONTEXT_STRATEGIES as readonly string[]).includes(strategy)) {
    throw invalidRequest(`metadata.${STRATEGY_KEY}`, `must be one of ${CONTEXT_STRATEGIES.join(", ")}, got ${JSON.stringify(strategy)}`);
  }
  const window = metadata[WINDOW_KEY];
  let tokens = 0;
  if (window !== undefined) {
    tokens = /^\d{1,9}$/.test(window) ? Number(window) : Number.NaN;
    if (!(tokens >= MIN_WINDOW_TOKENS && tokens <= MAX_WINDOW_TOKENS)) {
      throw invalidRequest(`metadata.${WINDOW_KEY}`, `must be an integer from ${MIN_WINDOW_TOKENS} to ${MAX_WINDOW_TOKENS}, got ${JSON.stringify(window)}`);
    }
  }
  return { contextStrategy: strategy, contextWindowTokens: tokens };
}
