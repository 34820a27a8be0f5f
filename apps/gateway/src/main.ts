/**
 * The gateway process: config, telemetry, the server, graceful shutdown on SIGTERM (open event
 * streams end first, then in-flight requests finish).
 */
import { createLogger, installShutdown } from "@metaharness/service-kit";
import { startTelemetry } from "@metaharness/telemetry";
import { startGateway } from "./app.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const telemetry = startTelemetry({ serviceName: "gateway", otlpEndpoint: config.otlpEndpoint });
const logger = createLogger({ service: "gateway", level: config.logLevel, redact: ['headers["x-api-key"]', "*.authorization_token"] });
const app = await startGateway(config, logger);
installShutdown(logger, [
  { name: "gateway", run: () => app.stop() },
  { name: "telemetry", run: () => telemetry.shutdown() },
]);
