/**
 * `mh dev`: every service in this one process on the embedded default (stack/embedded.ts), kept
 * running until SIGINT/SIGTERM, then stopped in order through service-kit's installShutdown.
 * Data lives in .local/dev (or --data-dir), or in memory with --memory; the local API key is
 * kept in the data directory either way, so clients on this machine find it. With
 * MH_OTLP_ENDPOINT its spans go there (one service, mh-dev), and with MH_JAEGER_QUERY_URL the
 * session page shows them (/ui/traces/:id).
 */
import { parseArgs } from "node:util";
import { MhError } from "@metaharness/errors";
import { env as envVar, readConfig } from "@metaharness/service-kit/config";
import { installShutdown } from "@metaharness/service-kit/lifecycle";
import { createLogger, type LogLevel } from "@metaharness/service-kit/logging";
import { startTelemetry } from "@metaharness/telemetry";
import { DEV_PORT } from "../client/connect.js";
import { readBwrapPath, readMoreApiKeys } from "../config.js";
import { demoScenario } from "../demo/scenario.js";
import type { Output } from "../output.js";
import { duration, style } from "../render/style.js";
import { writeDevAddress } from "../stack/dev-address.js";
import { ensureDevKey } from "../stack/dev-key.js";
import { lockDataDir } from "../stack/dev-lock.js";
import { defaultDataDir, startStack, type Stack, type StackOptions } from "../stack/embedded.js";
import { progressLine } from "./deployment.js";

const LEVELS: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "silent"];
/** Where spans go and where the session page reads them back, as for the services run alone. */
const TRACES = {
  otlpEndpoint: envVar.optionalUrl("MH_OTLP_ENDPOINT", { protocols: ["http", "https"] }),
  jaegerQueryUrl: envVar.optionalUrl("MH_JAEGER_QUERY_URL", { protocols: ["http", "https"] }),
} as const;

export interface DevOptions {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly memory: boolean;
  readonly logLevel: LogLevel;
  /** Other tenants' keys, `key:tenant,...` (--api-keys, else MH_GATEWAY_API_KEYS); the local key is tenant "local". */
  readonly moreApiKeys?: string | undefined;
}

export function parseDevArgs(args: string[], env: NodeJS.ProcessEnv): DevOptions {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      "data-dir": { type: "string" },
      memory: { type: "boolean" },
      "log-level": { type: "string" },
      "api-keys": { type: "string" },
    },
  });
  // Number("") is 0 (any free port): an empty --port, from an unset shell variable, is refused.
  const port = values.port === undefined ? DEV_PORT : /^\d{1,5}$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!Number.isInteger(port) || port > 65535) {
    throw new MhError("INVALID_ARGUMENT", `--port: ${JSON.stringify(values.port)} is not a port (0-65535; 0 takes any free one)`, { field: "port" });
  }
  const logLevel = (values["log-level"] ?? env["MH_LOG_LEVEL"] ?? "error") as LogLevel;
  if (!LEVELS.includes(logLevel)) throw new MhError("INVALID_ARGUMENT", `--log-level: one of ${LEVELS.join(", ")}`, { field: "log-level" });
  const moreApiKeys = values["api-keys"] ?? readMoreApiKeys(env);
  return { host: values.host ?? "127.0.0.1", port, dataDir: values["data-dir"] ?? defaultDataDir(env), memory: values.memory === true, logLevel, moreApiKeys };
}

/** Starts the stack as `mh dev` does (tests call this in-process, with port 0). */
export async function startDev(opts: DevOptions, env: NodeJS.ProcessEnv, extra: Pick<StackOptions, "scenarios" | "offlinePace" | "onProgress"> = {}): Promise<{ stack: Stack; keyPath: string }> {
  const { key, path } = await ensureDevKey(opts.dataDir).catch((err: unknown) => Promise.reject(unwritable(err, opts.dataDir)));
  const unlock = opts.memory ? () => Promise.resolve() : await lockDataDir(opts.dataDir).catch((err: unknown) => Promise.reject(unwritable(err, opts.dataDir)));
  const realKey = env["ANTHROPIC_API_KEY"];
  const { jaegerQueryUrl } = readConfig(TRACES, env);
  const bwrapPath = readBwrapPath(env);
  const started = startStack({
    apiKey: key,
    host: opts.host,
    port: opts.port,
    logLevel: opts.logLevel,
    scenarios: [demoScenario(), ...(extra.scenarios ?? [])],
    ...(extra.offlinePace === undefined ? {} : { offlinePace: extra.offlinePace }),
    ...(extra.onProgress === undefined ? {} : { onProgress: extra.onProgress }),
    ...(opts.moreApiKeys === undefined ? {} : { moreApiKeys: opts.moreApiKeys }),
    ...(bwrapPath === undefined ? {} : { bwrapPath }),
    ...(opts.memory ? {} : { dataDir: opts.dataDir }),
    ...(realKey === undefined || realKey === "" ? {} : { anthropicApiKey: realKey }),
    ...(jaegerQueryUrl === undefined ? {} : { jaegerQueryUrl }),
  });
  let stack: Stack;
  try {
    stack = await started;
  } catch (err) {
    await unlock();
    // Free when checked, taken by the time the gateway listened.
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new MhError("FAILED_PRECONDITION", `${opts.host}:${opts.port} is in use: pass --port N (0: any free port)`, { cause: err });
    }
    throw err;
  }
  // `mh run` and `mh sessions` on this machine find it there (the in-memory one too: its key is there).
  const forget = await writeDevAddress(opts.dataDir, stack.url).catch(async (err: unknown) => {
    await stack.stop();
    await unlock();
    throw err;
  });
  return {
    stack: { ...stack, stop: () => stack.stop().finally(() => forget().finally(() => unlock())) },
    keyPath: path,
  };
}

const UNWRITABLE = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EEXIST"]);

/** A data directory it cannot write in, said as such (the bare error named a file in it). */
function unwritable(err: unknown, dataDir: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === undefined || !UNWRITABLE.has(code)) return err instanceof Error ? err : new Error(String(err));
  return new MhError("FAILED_PRECONDITION", `cannot write in the data directory ${dataDir} (${code}): pass --data-dir (or set MH_DEV_DIR) to one you can write`, {
    field: "data_dir",
    cause: err,
  });
}

export function describeDev(stack: Stack, keyPath: string, out: Output, tenants = 0): void {
  const s = style(out.color);
  out.line(s.bold(`Meta-Harness dev: every service in this process, ready in ${duration(stack.startMs)}`));
  out.line();
  out.line(`  Page     ${s.cyan(`${stack.url}/ui/`)}  ${s.dim("(sessions live; it asks for the API key)")}`);
  out.line(`  URL      ${s.cyan(stack.url)}`);
  out.line(`  API key  ${s.cyan(stack.apiKey)}  ${s.dim(`(kept in ${keyPath})`)}`);
  if (tenants > 0) out.line(`  Tenants  local (this key) and ${tenants} more key${tenants === 1 ? "" : "s"} (--api-keys / MH_GATEWAY_API_KEYS)`);
  if (stack.model === "offline") {
    out.line("  Model    the offline model, as ANTHROPIC_API_KEY is not set: it acts on plain requests");
    out.line(`           ("list the files", "run <command>", "read <file>") and plays the demo; for Claude:`);
    out.line(s.dim("           ANTHROPIC_API_KEY=sk-ant-... npm run mh -- dev"));
  } else {
    out.line("  Model    Claude, through Anthropic's API (ANTHROPIC_API_KEY)");
  }
  out.line();
  out.line("From the official SDK (only baseURL changes):");
  out.line(s.dim(`  const client = new Anthropic({ baseURL: "${stack.url}", apiKey: "${stack.apiKey}" });`));
  out.line(s.dim("  await client.beta.sessions.create({ agent, environment_id });"));
  out.line("From the CLI, in another terminal here (it finds this mh dev; elsewhere, export MH_URL and MH_API_KEY):");
  out.line(s.dim('  npm run mh -- run "list the files"'));
  out.line(s.dim('  npm run mh -- run "run uname -a"'));
  out.line(s.dim(`  npm run mh -- demo --url ${stack.url}`));
  out.line(s.dim("  npm run mh -- sessions ls"));
  out.line(`An external hand (the example ${stack.hands.kind}), in another terminal:`);
  out.line(s.dim(`  MH_SANDBOX_BROKER_ADDR=${stack.hands.brokerAddress} MH_HAND_TOKEN_FILE=${shellWord(stack.hands.tokenFile)} npm run kv-device -w @metaharness/sandbox-broker`));
  out.line(s.dim(`  then an environment with metadata {"mh.hand": "${stack.hands.kind}"} offers its tools to its sessions' model,`));
  out.line(s.dim(`  or Provision with hand_kind "${stack.hands.kind}" on ${stack.hands.brokerAddress}, token in ${shellWord(stack.hands.operatorTokenFile)}`));
  out.line("Ctrl-C stops it.");
}

/** `value` as one word of a POSIX shell's command line (the data directory may hold spaces). */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

export async function dev(args: string[], out: Output, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const opts = parseDevArgs(args, env);
  const traces = readConfig(TRACES, env);
  // Before the services start, so their spans (and their events' trace ids) exist from the first.
  const telemetry = traces.otlpEndpoint === undefined ? undefined : startTelemetry({ serviceName: "mh-dev", otlpEndpoint: traces.otlpEndpoint });
  const s = style(out.color);
  out.line(s.bold("Meta-Harness dev: starting every service in this process"));
  const { stack, keyPath } = await startDev(opts, env, { onProgress: (p) => out.line(progressLine(p)) }).catch(async (err: unknown) => {
    await telemetry?.shutdown().catch(() => undefined);
    throw err;
  });
  describeDev(stack, keyPath, out, opts.moreApiKeys?.split(",").filter((k) => k.trim() !== "").length ?? 0);
  if (telemetry !== undefined) out.line(`Spans go to ${traces.otlpEndpoint}${traces.jaegerQueryUrl === undefined ? "." : `; each event's trace opens on the session page (${stack.url}/ui/).`}`);
  const logger = createLogger({ service: "mh-dev", level: opts.logLevel, destination: process.stderr });
  const stops = [{ name: "stack", run: () => stack.stop() }, ...(telemetry === undefined ? [] : [{ name: "telemetry", run: () => telemetry.shutdown() }])];
  return new Promise<number>((resolve) => {
    installShutdown(logger, stops, {
      exit: (code) => {
        out.line("stopped.");
        resolve(code);
      },
    });
  });
}
