/**
 * The session-log process: config, telemetry, the service, graceful shutdown on SIGTERM.
 */
import { createLogger, installShutdown } from "@metaharness/service-kit";
import { startTelemetry } from "@metaharness/telemetry";
import { startSessionLog } from "./app.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const telemetry = startTelemetry({ serviceName: "session-log", otlpEndpoint: config.otlpEndpoint });
const logger = createLogger({ service: "session-log", level: config.logLevel });
const app = await startSessionLog(config, logger);
installShutdown(logger, [
  { name: "session-log", run: () => app.stop() },
  { name: "telemetry", run: () => telemetry.shutdown() },
]);
