#!/usr/bin/env node
/**
 * mh: the command line of Meta-Harness. Commands: demo.
 */
import { parseArgs } from "node:util";
import { demo } from "./commands/demo.js";

const USAGE = `usage: mh <command>

commands:
  demo [--db URL]   the session log on the embedded default, driven by a scripted harness
                    (--db pglite:memory by default; pglite:///dir or postgres://... also work)
`;

const write = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "demo": {
      const { values } = parseArgs({ args: rest, options: { db: { type: "string" } } });
      return demo(write, values.db);
    }
    case undefined:
    case "help":
    case "--help":
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`mh: unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`mh: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
