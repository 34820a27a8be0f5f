/**
 * The flags a service's node process runs with, as its package.json declares them
 * ("metaharness": { "nodeFlags": [...] }): the one list that infra/stack/up.sh, the deploy files
 * (checked by test/integration/infra/deploy-files.test.ts) and the tests' own service processes
 * (process.ts) all start it with, so what the benchmarks measure is what is deployed. Why a
 * service has flags at all: docs/performance.md, "Garbage collection".
 */
import { readFileSync } from "node:fs";

const ROOT = new URL("../../", import.meta.url).pathname;

/** `main` is the script's path, absolute or from the repository root ("apps/session-log/dist/main.js"). */
export function nodeFlagsOf(main: string): string[] {
  const dir = (main.startsWith(ROOT) ? main.slice(ROOT.length) : main).replace(/\/dist\/[^/]+$/, "");
  const pkg = JSON.parse(readFileSync(`${ROOT}${dir}/package.json`, "utf8")) as { metaharness?: { nodeFlags?: unknown } };
  const flags = pkg.metaharness?.nodeFlags ?? [];
  if (!Array.isArray(flags) || !flags.every((f): f is string => typeof f === "string" && f.startsWith("--"))) {
    throw new Error(`${dir}/package.json: metaharness.nodeFlags must be a list of "--flag" strings`);
  }
  return flags;
}
