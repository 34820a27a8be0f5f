/**
 * The CLI as a library: tests start `mh dev`'s stack in-process and reuse the renderers and the
 * local git server.
 */
export { startStack, defaultDataDir, type Stack, type StackOptions } from "./stack/embedded.js";
export { describeDev, startDev, parseDevArgs, type DevOptions } from "./commands/dev.js";
export { captureOutput } from "./output.js";
export { demoScenario, DEMO_PROMPT, DEMO_SCENARIO, DEMO_SYSTEM } from "./demo/scenario.js";
export { startGitHttpServer, type GitHttpServer, type GitHttpServerOptions } from "./git/http-server.js";
export { commitToBare, gitIn, lastCommit, type Identity, type RepositoryFile } from "./git/bare-repository.js";
export { EXIT, EXIT_CODE_HELP, exitCodeFor, type Ending, type ExitCode } from "./exit-codes.js";
export { formatEvent } from "./render/event-line.js";
