/**
 * Every setting of the standalone offline model, read from the environment in this one place.
 * The defaults feel like a real model (a short pause, then ~80 tokens a second) so an offline
 * `mh run` looks alive; tests use `startOfflineModel` with their own numbers instead.
 */
import { env, readConfig, type EnvSource } from "@metaharness/service-kit/config";

export const DEFAULT_PORT = 8790;
/** The context window of today's Claude models (the real API refuses a longer prompt). */
export const DEFAULT_WINDOW_TOKENS = 200_000;

export function loadConfig(source: EnvSource = process.env) {
  return readConfig(
    {
      host: env.string("MH_OFFLINE_MODEL_HOST", { default: "127.0.0.1" }),
      port: env.port("MH_OFFLINE_MODEL_PORT", { default: DEFAULT_PORT }),
      ttftMs: env.durationMs("MH_OFFLINE_MODEL_TTFT_MS", { default: 300, max: 600_000 }),
      tokensPerSecond: env.int("MH_OFFLINE_MODEL_TOKENS_PER_SECOND", { default: 80, min: 0, max: 1_000_000 }),
      windowTokens: env.int("MH_OFFLINE_MODEL_WINDOW_TOKENS", { default: DEFAULT_WINDOW_TOKENS, min: 1, max: 100_000_000 }),
      scenarioFile: env.optional(env.string("MH_OFFLINE_MODEL_SCENARIOS")),
      apiKey: env.optional(env.string("MH_OFFLINE_MODEL_API_KEY", { secret: true })),
      logLevel: env.enumOf("MH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], { default: "info" }),
    },
    source,
  );
}

export type OfflineModelConfig = ReturnType<typeof loadConfig>;
