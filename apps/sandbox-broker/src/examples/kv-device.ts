/**
 * The kv device as a process: `node dist/examples/kv-device.js` (or `npm run kv-device -w
 * @metaharness/sandbox-broker`) with MH_SANDBOX_BROKER_ADDR=host:port and MH_HAND_TOKEN_FILE (its
 * service token, which the broker gives the role "hand"). It stays connected until
 * SIGTERM/SIGINT, and exits 1 if the broker goes away.
 */
import { env, readConfig } from "@metaharness/service-kit/config";
import { GRPC_TLS_ENV, loadGrpcTls, readServiceToken } from "@metaharness/service-kit/grpc";
import { installShutdown } from "@metaharness/service-kit/lifecycle";
import { createLogger } from "@metaharness/service-kit/logging";
import { startKvDevice } from "./kv-device-hand.js";

const config = readConfig(
  {
    address: env.string("MH_SANDBOX_BROKER_ADDR", { default: "127.0.0.1:15053" }),
    tokenFile: env.string("MH_HAND_TOKEN_FILE", { pattern: /^\/.+$/ }),
    handId: env.optional(env.string("MH_HAND_ID", { pattern: /^[A-Za-z0-9._:-]{1,128}$/ })),
    logLevel: env.enumOf("MH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], { default: "info" }),
    // MH_GRPC_TLS_CA_FILE makes the connection TLS (and the cert/key, if the broker asks for one).
    ...GRPC_TLS_ENV,
  },
  process.env,
);
const logger = createLogger({ service: "kv-device", level: config.logLevel });
const tls = await loadGrpcTls(config);
const device = startKvDevice({
  address: config.address,
  token: await readServiceToken(config.tokenFile),
  handId: config.handId,
  logger,
  credentials: tls.client,
});
const shutdown = installShutdown(logger, [
  {
    name: "kv-device",
    run: async () => {
      device.close();
      await device.closed;
    },
  },
]);
void device.closed.then((why) => {
  logger.warn({ hand_id: device.handId, why }, "disconnected from the broker");
  shutdown.uninstall();
  process.exitCode = 1;
});
