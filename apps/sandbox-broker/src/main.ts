/**
 * The sandbox-broker process: config, telemetry, the service, graceful shutdown on SIGTERM
 * (stop accepting calls, kill every sandbox and record it RELEASED, "broker shut down").
 */
import { createLogger, installShutdown } from "@metaharness/service-kit";
import { startTelemetry } from "@metaharness/telemetry";
import { startSandboxBroker } from "./app.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const telemetry = startTelemetry({ serviceName: "sandbox-broker", otlpEndpoint: config.otlpEndpoint });
const logger = createLogger({ service: "sandbox-broker", level: config.logLevel });
const app = await startSandboxBroker(config, logger);
installShutdown(logger, [
  { name: "sandbox-broker", run: () => app.stop() },
  { name: "telemetry", run: () => telemetry.shutdown() },
]);
