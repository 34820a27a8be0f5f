/**
 * The offline model as a process: config from the environment, the server, graceful shutdown on
 * SIGTERM/SIGINT. `ANTHROPIC_BASE_URL=http://127.0.0.1:8790` points any Anthropic SDK at it.
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { loadConfig } from "./config.js";
import { startOfflineModel } from "./server.js";

await runService({
  name: "offline-model",
  loadConfig,
  start: async (config, logger) => {
    const model = await startOfflineModel({
      host: config.host,
      port: config.port,
      ttftMs: config.ttftMs,
      tokensPerSecond: config.tokensPerSecond,
      windowTokens: config.windowTokens,
      ...(config.scenarioFile === undefined ? {} : { scenarioFile: config.scenarioFile }),
      ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
      logger,
    });
    return { stop: () => model.close() };
  },
});
