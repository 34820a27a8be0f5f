/**
 * The harness as a library: tests and the single-process `mh dev` start it in-process.
 */
export { startHarness, LOOPS, type HarnessHandle } from "./app.js";
export { loadConfig, type HarnessConfig } from "./config.js";
export { LINGER_MARGIN_MAX_MS, lingerMarginMs } from "./lease-keeper.js";
export { nextStep, unansweredToolUses, type NextStep } from "./state.js";
export { limitsOf, NO_LIMITS, usageTotals, type Limits } from "./budget.js";
export type { HarnessLoop, LoopContext } from "./loop/harness-loop.js";
export { SessionEvents, type ViewContext } from "./loop/session-events.js";
export { LogPort } from "./log-port.js";
export { SandboxPort, type BrokerClient, type ToolOutcome } from "./tools/sandbox.js";
export { toMessages } from "./context/messages.js";
export { STRATEGIES } from "./context/strategies.js";
export type { ContextInput, ContextStrategy } from "./context/strategy.js";
