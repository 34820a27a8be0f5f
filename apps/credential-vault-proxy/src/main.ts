/**
 * The credential-vault-proxy process: config, telemetry, the service, graceful shutdown on SIGTERM.
 */
import { createLogger, installShutdown } from "@metaharness/service-kit";
import { startTelemetry } from "@metaharness/telemetry";
import { startCredentialProxy } from "./app.js";
import { loadConfig } from "./config.js";

const config = loadConfig();
const telemetry = startTelemetry({ serviceName: "credential-vault-proxy", otlpEndpoint: config.otlpEndpoint });
const logger = createLogger({ service: "credential-vault-proxy", level: config.logLevel });
const app = await startCredentialProxy(config, logger);
installShutdown(logger, [
  { name: "credential-vault-proxy", run: () => app.stop() },
  { name: "telemetry", run: () => telemetry.shutdown() },
]);
