/**
 * The CLI as a library: tests start `mh dev`'s stack in-process and reuse the renderers.
 */
export { startStack, defaultDataDir, type Stack, type StackOptions } from "./stack/embedded.js";
export { startDev, parseDevArgs, type DevOptions } from "./commands/dev.js";
export { demoScenario, DEMO_PROMPT, DEMO_SCENARIO, DEMO_SYSTEM } from "./demo/scenario.js";
export { localWorkspace, cloneWorkspace, type DemoWorkspace } from "./demo/workspace.js";
export { EXIT, EXIT_CODE_HELP, exitCodeFor, type Ending, type ExitCode } from "./exit-codes.js";
export { formatEvent } from "./render/event-line.js";
