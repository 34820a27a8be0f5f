/**
 * The sandbox-broker process: config, telemetry, the service, graceful shutdown on SIGTERM
 * (stop accepting calls, kill every sandbox and record it RELEASED, "broker shut down").
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { startSandboxBroker } from "./app.js";
import { loadConfig } from "./config.js";

await runService({ name: "sandbox-broker", loadConfig, start: startSandboxBroker });
