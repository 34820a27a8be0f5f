/**
 * @metaharness/offline-model: a server that speaks the Anthropic Messages API (JSON and SSE),
 * answering from scripted scenarios, for running Meta-Harness and its tests without network access.
 */
export {
  startOfflineModel,
  MAX_REQUEST_BYTES,
  type OfflineModel,
  type OfflineModelOptions,
} from "./server.js";
export {
  defineScenario,
  FAILURE_KINDS,
  type FailFirst,
  type FailureKind,
  type Scenario,
  type ScenarioOptions,
  type Step,
  type StepContext,
  type StepFunction,
  type StepSpec,
  type ToolResultView,
  type ToolUseSpec,
} from "./scenario.js";
export { ScenarioRegistry } from "./registry.js";
export { DEFAULT_SCENARIO_NAME, defaultScenario } from "./default-scenario.js";
export { loadScenarioFile, scenariosFrom } from "./scenario-file.js";
export { SCENARIO_HEADER } from "./conversation.js";
export { signThinking } from "./ids.js";
export { loadConfig, DEFAULT_PORT, DEFAULT_WINDOW_TOKENS } from "./config.js";
export { type OfflineModelLogger } from "./logger.js";
export { type PromptCacheOptions } from "./prompt-cache.js";
export { type RecordedRequest, type RequestOutcome } from "./recorder.js";
export { ERROR_TYPE_BY_STATUS, type ApiErrorType, type ErrorBody, type ErrorStatus } from "./api-error.js";
export type { Message as WireMessage, MessagesRequest, StreamEvent as WireStreamEvent, Usage as WireUsage } from "./wire.js";
