/**
 * The credential-vault-proxy process: config, telemetry, the service, graceful shutdown on SIGTERM.
 */
import { runService } from "@metaharness/service-kit/lifecycle";
import { startCredentialProxy } from "./app.js";
import { loadConfig } from "./config.js";

await runService({ name: "credential-vault-proxy", loadConfig, start: startCredentialProxy });
