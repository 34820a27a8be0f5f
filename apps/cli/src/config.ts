/**
 * The variables that shape an embedded stack started by the CLI, read in this one place (the
 * services' own settings are passed to them explicitly, never read from MH_* by stack/embedded.ts).
 */
import { env as envVar, readConfig } from "@metaharness/service-kit/config";

const STACK = {
  /** The bwrap the sandbox broker runs, as for the broker alone; unset: /usr/bin/bwrap, installed when missing. */
  bwrapPath: envVar.optional(envVar.absolutePath("MH_BWRAP_PATH")),
  /** `mh dev`'s other tenants, as the gateway alone reads them (`key:tenant,...`); --api-keys wins. */
  apiKeys: envVar.optional(envVar.string("MH_GATEWAY_API_KEYS")),
} as const;

export function readBwrapPath(env: NodeJS.ProcessEnv): string | undefined {
  return readConfig(STACK, env).bwrapPath;
}

export function readMoreApiKeys(env: NodeJS.ProcessEnv): string | undefined {
  return readConfig(STACK, env).apiKeys;
}
