/**
 * `mh-vault-rotate`: re-wraps every data key under the active master key, offline (no server
 * needed, the same environment as the service). Then the previous key files can be removed.
 *   MH_MASTER_KEY_FILE=/keys/new MH_PREVIOUS_MASTER_KEY_FILES=/keys/old node dist/rotate-main.js
 * With --new-key <path> it writes a fresh master key file (mode 600) and exits.
 */
import { writeFile } from "node:fs/promises";
import { migrate, openDb } from "@metaharness/db";
import { env, readConfig } from "@metaharness/service-kit/config";
import { createLogger } from "@metaharness/service-kit/logging";
import { loadMasterKeyring, newMasterKeyText } from "./crypto/master-keys.js";
import { rotateMasterKey } from "./store/rotation.js";

const logger = createLogger({ service: "credential-vault-rotate" });
const [flag, path] = process.argv.slice(2);
if (flag === "--new-key" && path !== undefined) {
  await writeFile(path, newMasterKeyText(), { mode: 0o600, flag: "wx" });
  logger.info({ path }, "wrote a new master key file");
} else {
  const config = readConfig(
    {
      databaseUrl: env.url("MH_DATABASE_URL", { default: "postgres://metaharness:metaharness@127.0.0.1:5432/metaharness" }),
      masterKeyFile: env.absolutePath("MH_MASTER_KEY_FILE"),
      previousMasterKeyFiles: env.list("MH_PREVIOUS_MASTER_KEY_FILES", { default: [] }),
    },
    process.env,
  );
  const keyring = await loadMasterKeyring(config.masterKeyFile, config.previousMasterKeyFiles, (w) =>
    logger.warn({ file: w.file }, `master key file ${w.problem}`),
  );
  const db = await openDb(config.databaseUrl, { poolSize: 2, onIdleError: () => undefined, applicationName: "credential-vault-proxy rotate" });
  try {
    await migrate(db, "credential-vault-proxy", new URL("../migrations/", import.meta.url));
    const result = await rotateMasterKey(db, keyring);
    logger.info({ active_key_id: result.activeKeyId, rewrapped: result.rewrapped }, "every data key is wrapped by the active master key");
  } finally {
    await db.end();
  }
}
