/**
 * A service that starts, then gets a warning from Node and a rejection nobody handles, through the
 * service kit's runService as every service's main: start-failures.test.ts reads what it logs.
 */
import { env, readConfig } from "@metaharness/service-kit/config";
import { runService } from "@metaharness/service-kit/lifecycle";

await runService({
  name: "crashing-service",
  loadConfig: () => readConfig({ logLevel: env.enumOf("MH_LOG_LEVEL", ["info", "warn"], { default: "info" }) }, process.env),
  start: (_config, logger) => {
    logger.info("serving");
    setTimeout(() => process.emitWarning("a warning the service did not cause", { code: "MH_TEST_WARNING" }), 50);
    if (process.env["MH_TEST_THROW"] === "null") {
      // What is thrown need not be an Error.
      setTimeout(() => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
        throw null;
      }, 200);
    } else {
      setTimeout(() => void Promise.reject(new Error("nobody handles this")), 200);
    }
    return Promise.resolve({ stop: () => Promise.resolve() });
  },
});
