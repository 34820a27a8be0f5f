#!/usr/bin/env node
/**
 * mh: the command line of Meta-Harness. Dispatches to a command, turns Ctrl-C into an
 * interrupt the running command handles, and exits with the command's code once stdout is
 * flushed (an embedded stack's last handles must not keep the process alive).
 */
import { createRequire } from "node:module";
import Anthropic from "@anthropic-ai/sdk";
import { MhError } from "@metaharness/errors";
import { Interrupts } from "./client/session-run.js";
import { demo } from "./commands/demo.js";
import { dev } from "./commands/dev.js";
import { run } from "./commands/run.js";
import { sessions } from "./commands/sessions.js";
import { NO_GATEWAY_HINT } from "./client/connect.js";
import { EXIT } from "./exit-codes.js";
import { isSetupError } from "./stack/preflight.js";
import { terminalOutput, type Output } from "./output.js";
import { USAGE } from "./usage.js";

async function main(argv: string[], out: Output): Promise<number> {
  const [command, ...rest] = argv;
  const interrupts = new Interrupts();
  const onSignal = (): void => {
    if (!interrupts.interrupt()) process.exit(EXIT.interrupted);
  };
  // mh dev installs service-kit's shutdown handlers instead.
  if (command !== "dev") for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, onSignal);
  // `mh run --help`: the usage, which holds every command's options, rather than "unknown option".
  if (command !== undefined && rest.some((a) => a === "--help" || a === "-h")) {
    out.write(USAGE);
    return EXIT.ok;
  }
  switch (command) {
    case "demo":
      return demo(rest, out, interrupts);
    case "dev":
      return dev(rest, out);
    case "run":
      return run(rest, out, interrupts);
    case "sessions":
      return sessions(rest, out, interrupts);
    case "version":
    case "--version":
    case "-v":
      out.line(`mh ${version()}`);
      return EXIT.ok;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      out.write(USAGE);
      return EXIT.ok;
    default:
      out.error(`mh: unknown command "${command}"\n`);
      out.error(USAGE);
      return EXIT.usage;
  }
}

/** node:util parseArgs's refusals of a command line: an unknown option, a missing or extra value, a stray argument. */
const PARSE_ERRORS: ReadonlySet<unknown> = new Set(["ERR_PARSE_ARGS_UNKNOWN_OPTION", "ERR_PARSE_ARGS_INVALID_OPTION_VALUE", "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL"]);

function isParseError(err: unknown): boolean {
  return err instanceof TypeError && PARSE_ERRORS.has((err as { code?: unknown }).code);
}

/** This CLI's version, from its package.json (apps/cli/package.json, beside dist/). */
function version(): string {
  return (createRequire(import.meta.url)("../package.json") as { version: string }).version;
}

/**
 * A failure in one line. The SDK's own message for an HTTP error is the status and the raw JSON
 * body; the gateway's message (and its type) reads better.
 */
function messageOf(err: unknown): string {
  if (err instanceof Anthropic.APIError && err.status !== undefined) {
    const body = (err.error ?? {}) as { error?: { type?: unknown; message?: unknown } };
    const said = body.error?.message;
    if (typeof said === "string" && said !== "") return `${said} (HTTP ${err.status}${typeof body.error?.type === "string" ? ` ${body.error.type}` : ""})`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** What to do about a failure the message alone does not say. */
function hintFor(err: unknown): string {
  if (isParseError(err)) return " (mh --help lists every command's options)";
  if (err instanceof Anthropic.APIConnectionError) return ` (${NO_GATEWAY_HINT})`;
  if (err instanceof Anthropic.AuthenticationError) return " (the gateway refused the key: check --api-key / MH_API_KEY)";
  return "";
}

function exitCodeOf(err: unknown): number {
  if (err instanceof MhError && err.code === "INVALID_ARGUMENT") return EXIT.usage;
  if (isParseError(err)) return EXIT.usage;
  if (isSetupError(err)) return EXIT.setup;
  return EXIT.failure;
}

const out = terminalOutput();
main(process.argv.slice(2), out).then(
  (code) => process.stdout.write("", () => process.exit(code)),
  (err: unknown) => {
    out.error(`mh: ${messageOf(err)}${hintFor(err)}`);
    process.stdout.write("", () => process.exit(exitCodeOf(err)));
  },
);
