/**
 * Loaded into a service process by a benchmark (`node --import tsx --import <this file>`, see
 * callCounterArgs) to count what the process sends while it is measured: its gRPC calls by method
 * (grpc-js's Client, through which every client of ours calls), its Postgres statements (pg's
 * Client, under every pool of ours) and its socket writes (each one write syscall: HTTP responses,
 * event-stream frames, HTTP/2 to the services, Postgres), the spans it started (recorded or not), and what it allocated on the JS heap (from
 * each garbage collection's heap sizes before and after, v8.GCProfiler: the bytes that were used
 * before a collection less those left after the one before it) with its collections by kind and
 * their time, and the promises and other async resources it made.
 * It also counts the HTTP/2 streams its gRPC server saw end, by method and how (ended, or reset
 * by the client), its timers (setTimeout, setInterval) and the items of batched calls.
 * Counts, unlike timings, do not depend on the machine's load.
 * On SIGUSR2 the counts so far are written to MH_BENCH_COUNTS_FILE (readCallCounts asks for them).
 * The process's own code is not changed: the same file counts the code before and after a change.
 */
import { createHook } from "node:async_hooks";
import { renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Http2Server, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { Socket } from "node:net";
import { GCProfiler, getHeapStatistics } from "node:v8";

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
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      count(key(args));
      return original.apply(this, args);
    };
    // setTimeout's util.promisify.custom, among others, kept.
    Object.defineProperties(wrapped, Object.getOwnPropertyDescriptors(original));
    proto[method] = wrapped;
  };
  const grpc = load("@grpc/grpc-js") as { Client: { prototype: Prototype } };
  for (const method of ["makeUnaryRequest", "makeServerStreamRequest", "makeClientStreamRequest", "makeBidiStreamRequest"]) {
    wrap(grpc.Client.prototype, method, (args) => {
      const method = String(args[0]).split("/").pop() ?? "";
      // A batch's items too (RenewLeases' leases: a row each in its one statement).
      const items = (args[3] as { leases?: unknown } | undefined)?.leases;
      if (Array.isArray(items)) counts[`items in grpc ${method}`] = (counts[`items in grpc ${method}`] ?? 0) + items.length;
      return `grpc ${method}`;
    });
  }
  // What its gRPC server saw end, by method and how: "ended", or reset with the client's
  // RST_STREAM code (8, CANCEL: a cancelled stream, which nghttp2's rapid-reset allowance counts).
  // grpc-js makes its server with http2.createServer, read from the module at the call.
  const http2 = load("node:http2") as { createServer: (...args: unknown[]) => Http2Server };
  const createServer = http2.createServer;
  http2.createServer = (...args: unknown[]): Http2Server => {
    const server = createServer(...args);
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      const method = String(headers[":path"] ?? "").split("/").pop() ?? "";
      stream.once("close", () => count(`h2 ${method} ${stream.rstCode === 0 ? "ended" : `reset ${stream.rstCode}`}`));
    });
    return server;
  };
  wrap(globalThis, "setTimeout", () => "timers setTimeout");
  wrap(globalThis, "setInterval", () => "timers setInterval");
  const pg = load("pg") as { Client: { prototype: Prototype } };
  wrap(pg.Client.prototype, "query", (args) => {
    const q = args[0];
    const text = typeof q === "string" ? q : typeof q === "object" && q !== null && "text" in q ? String(q.text) : "?";
    return `sql ${text.trim().split(/\s+/).slice(0, 4).join(" ")}`;
  });
  // Spans, recorded or not: every tracer the process registers is counted through its startSpan
  // (startActiveSpan goes through it too).
  const api = load("@opentelemetry/api") as { trace: { setGlobalTracerProvider(p: { getTracer(...a: unknown[]): unknown }): boolean } };
  const setProvider = api.trace.setGlobalTracerProvider.bind(api.trace);
  api.trace.setGlobalTracerProvider = (provider) => {
    const getTracer = provider.getTracer.bind(provider);
    provider.getTracer = (...a: unknown[]): unknown => {
      const tracer = getTracer(...a) as object;
      const proto = Object.getPrototypeOf(tracer) as Prototype & { counted?: boolean };
      if (proto.counted !== true) {
        proto.counted = true;
        const startSpan = proto["startSpan"] as (...args: unknown[]) => { isRecording(): boolean };
        proto["startSpan"] = function (this: unknown, ...args: unknown[]): unknown {
          const span = startSpan.apply(this, args);
          count(span.isRecording() ? "spans recorded" : "spans not recorded");
          return span;
        };
      }
      return tracer;
    };
    return setProvider(provider);
  };
  // Promises and the other async resources the process made (nextTicks, timers, streams...): on
  // Node 20 each runs AsyncLocalStorage's hooks, which OpenTelemetry's context manager enables
  // for the process's life (about 0.14 us of CPU a promise more, alternated in one process).
  createHook({ init: (_id, type) => count(type === "PROMISE" ? "async promises" : "async resources (not promises)") }).enable();
  // Every write of a net.Socket (TCP) goes through _writeGeneric: one writev or write each.
  wrap(Socket.prototype as unknown as Prototype, "_writeGeneric", () => "socket writes");
  // Allocation: what the heap grew by between collections, summed (a collection's "before" less
  // the previous one's "after"); the profiler is restarted at each read to hand its records over.
  let gc = new GCProfiler();
  gc.start();
  let lastAfter: number | undefined;
  let allocated = 0;
  const takeGc = (): void => {
    const { statistics } = gc.stop();
    gc = new GCProfiler();
    gc.start();
    for (const s of statistics) {
      const before = s.beforeGC.heapStatistics.usedHeapSize;
      if (lastAfter !== undefined) allocated += Math.max(0, before - lastAfter);
      lastAfter = s.afterGC.heapStatistics.usedHeapSize;
      count(`gc ${s.gcType}`);
      // The collection's time on the main thread (GCProfiler's cost, in microseconds).
      counts[`gc ${s.gcType} ms`] = (counts[`gc ${s.gcType} ms`] ?? 0) + s.cost / 1000;
    }
    // And what was allocated since the last collection, not yet collected.
    const since = lastAfter === undefined ? 0 : Math.max(0, getHeapStatistics().used_heap_size - lastAfter);
    counts["heap KB allocated"] = Math.round((allocated + since) / 1024);
  };
  let seq = 0;
  process.on("SIGUSR2", () => {
    seq += 1;
    takeGc();
    // Whole or not at all for the reader: written aside, then renamed over the file.
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq, counts }));
    renameSync(`${file}.tmp`, file);
  });
}
