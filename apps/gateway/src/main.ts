/**
 * The gateway process: config, telemetry, the server, graceful shutdown on SIGTERM (open event
 * streams end first, then in-flight requests finish).
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { startGateway } from "./app.js";
import { loadConfig } from "./config.js";

await runService({ name: "gateway", loadConfig, start: startGateway, redact: ['headers["x-api-key"]', "*.authorization_token"] });
