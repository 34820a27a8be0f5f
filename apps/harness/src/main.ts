/**
 * The harness process: config, telemetry, the instance, graceful shutdown on SIGTERM (leases are
 * released so another instance resumes the sessions at once).
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { startHarness } from "./app.js";
import { loadConfig } from "./config.js";

await runService({ name: "harness", loadConfig, start: startHarness });
