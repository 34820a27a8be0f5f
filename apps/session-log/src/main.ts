/**
 * The session-log process: config, telemetry, the service, graceful shutdown on SIGTERM.
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { startSessionLog } from "./app.js";
import { loadConfig } from "./config.js";

await runService({ name: "session-log", loadConfig, start: startSessionLog });
