#!/usr/bin/env node
/**
 * mh: the command line of Meta-Harness. Dispatches to a command, turns Ctrl-C into an
 * interrupt the running command handles, and exits with the command's code once stdout is
 * flushed (an embedded stack's last handles must not keep the process alive).
 */
import { MhError } from "@metaharness/errors";
import { Interrupts } from "./client/session-run.js";
import { demo } from "./commands/demo.js";
import { dev } from "./commands/dev.js";
import { run } from "./commands/run.js";
import { sessions } from "./commands/sessions.js";
import { EXIT } from "./exit-codes.js";
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
  switch (command) {
    case "demo":
      return demo(rest, out, interrupts);
    case "dev":
      return dev(rest, out);
    case "run":
      return run(rest, out, interrupts);
    case "sessions":
      return sessions(rest, out, interrupts);
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

function exitCodeOf(err: unknown): number {
  if (err instanceof MhError && err.code === "INVALID_ARGUMENT") return EXIT.usage;
  if (err instanceof TypeError && (err as { code?: unknown }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return EXIT.usage;
  return EXIT.failure;
}

const out = terminalOutput();
main(process.argv.slice(2), out).then(
  (code) => process.stdout.write("", () => process.exit(code)),
  (err: unknown) => {
    out.error(`mh: ${err instanceof Error ? err.message : String(err)}`);
    process.stdout.write("", () => process.exit(exitCodeOf(err)));
  },
);
