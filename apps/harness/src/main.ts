/**
 * The harness process: config, telemetry, the instance, graceful shutdown on SIGTERM (leases are
 * released so another instance resumes the sessions at once).
 */
import { createLogger, installShutdown } from "@metaharness/service-kit";
import { startTelemetry } from "@metaharness/telemetry";
import { startHarness } from "./app.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const telemetry = startTelemetry({ serviceName: "harness", otlpEndpoint: config.otlpEndpoint });
const logger = createLogger({ service: "harness", level: config.logLevel });
const app = await startHarness(config, logger);
installShutdown(logger, [
  { name: "harness", run: () => app.stop() },
  { name: "telemetry", run: () => telemetry.shutdown() },
]);
