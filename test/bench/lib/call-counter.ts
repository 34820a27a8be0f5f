/**
 * Loaded into a service process by a benchmark (`node --import tsx --import <this file>`, see
 * callCounterArgs) to count what the process sends while it is measured: its gRPC calls by method
 * (grpc-js's Client, through which every client of ours calls), its Postgres statements (pg's
 * Client, under every pool of ours) and its socket writes (each one write syscall: HTTP responses,
 * event-stream frames, HTTP/2 to the services, Postgres). Counts, unlike timings, do not depend on the machine's load.
 * On SIGUSR2 the counts so far are written to MH_BENCH_COUNTS_FILE (readCallCounts asks for them).
 * The process's own code is not changed: the same file counts the code before and after a change.
 */
import { renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Socket } from "node:net";

interface Prototype {
  [method: string]: unknown;
}

const file = process.env["MH_BENCH_COUNTS_FILE"];
const main = process.argv[1];
if (file !== undefined && main !== undefined) {
  // The copies the service itself loads: resolved from its main script, as its own imports are.
  const load = createRequire(main);
  const counts: Record<string, number> = {};
  const count = (key: string): void => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const wrap = (proto: Prototype, method: string, key: (args: unknown[]) => string): void => {
    const original = proto[method] as (...args: unknown[]) => unknown;
    proto[method] = function (this: unknown, ...args: unknown[]): unknown {
      count(key(args));
      return original.apply(this, args);
    };
  };
  const grpc = load("@grpc/grpc-js") as { Client: { prototype: Prototype } };
  for (const method of ["makeUnaryRequest", "makeServerStreamRequest", "makeClientStreamRequest", "makeBidiStreamRequest"]) {
    wrap(grpc.Client.prototype, method, (args) => `grpc ${String(args[0]).split("/").pop() ?? ""}`);
  }
  const pg = load("pg") as { Client: { prototype: Prototype } };
  wrap(pg.Client.prototype, "query", (args) => {
    const q = args[0];
    const text = typeof q === "string" ? q : typeof q === "object" && q !== null && "text" in q ? String(q.text) : "?";
    return `sql ${text.trim().split(/\s+/).slice(0, 4).join(" ")}`;
  });
  // Every write of a net.Socket (TCP) goes through _writeGeneric: one writev or write each.
  wrap(Socket.prototype as unknown as Prototype, "_writeGeneric", () => "socket writes");
  let seq = 0;
  process.on("SIGUSR2", () => {
    seq += 1;
    // Whole or not at all for the reader: written aside, then renamed over the file.
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq, counts }));
    renameSync(`${file}.tmp`, file);
  });
}
