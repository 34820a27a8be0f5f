/**
 * The context window of each model the harness knows, in one typed place: what the compaction
 * strategy takes as the window when the agent names none (AgentConfig.context_window_tokens).
 * Matched by the longest prefix of the model id, so dated ids ("claude-sonnet-4-5-20250929") find
 * their family. Unknown models get DEFAULT_MODEL_WINDOW, today's common Claude window.
 */

export const DEFAULT_MODEL_WINDOW = 200_000;

/** Model id prefix -> window in tokens (the Messages API's standard windows, without beta headers). */
export const MODEL_WINDOWS: Readonly<Record<string, number>> = {
  "claude-opus-4": 200_000,
  "claude-sonnet-4": 200_000,
  "claude-haiku-4": 200_000,
  "claude-3-7-sonnet": 200_000,
  "claude-3-5-haiku": 200_000,
  // The offline model's default (packages/offline-model, MH_OFFLINE_MODEL_WINDOW_TOKENS).
  "claude-offline": 200_000,
};

export function modelWindow(model: string): number {
  let best: string | undefined;
  for (const prefix of Object.keys(MODEL_WINDOWS)) {
    if (model.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? DEFAULT_MODEL_WINDOW : (MODEL_WINDOWS[best] ?? DEFAULT_MODEL_WINDOW);
}
