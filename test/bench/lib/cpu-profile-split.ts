/**
 * Where a process's CPU went in a measured window, from its `--cpu-prof` profile: each sample in
 * the window is put in one category, named for the nearest frame from the leaf up that belongs to
 * a library or part we can name (grpc-js, pg, kafkajs, our own code...), so a socket write that pg
 * asked for counts as pg's. What no such frame asked for counts for the nearest part of Node on
 * its stack (HTTP/2, sockets: data arriving before a library's handler runs), else Node's
 * internals (timers, microtasks, streams).
 * The categories' shares of the busy samples, times the process's CPU per turn measured from /proc
 * over the same window, give ms per turn by category: the accounting issue 31 asks for, printed by
 * the benchmark that measured it instead of worked out by hand from a profile.
 *
 * V8's profile timestamps are CLOCK_MONOTONIC microseconds, the clock of `process.hrtime` in any
 * process on the machine, so the benchmark's window edges select the samples directly. A profile
 * samples the main thread only; scaling its shares to the whole process's CPU assumes the other
 * threads (GC helpers, libuv's pool) follow the same split, which the note says.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Categories by the nearest frame that names them; first match wins, so the specific come first. */
const LIBRARIES: ReadonlyArray<readonly [string, RegExp]> = [
  ["gRPC (grpc-js)", /@grpc\/grpc-js\//],
  ["Postgres client (pg)", /\/node_modules\/(pg|pg-protocol|pg-pool|pg-types)\//],
  ["Kafka client (kafkajs)", /\/node_modules\/kafkajs\//],
  ["protobuf (ts-proto, protobufjs)", /\/node_modules\/protobufjs\/|\/node_modules\/@bufbuild\/|\/packages\/proto\//],
  ["OpenTelemetry", /\/node_modules\/@opentelemetry\//],
  ["model request (the SDK, undici)", /\/node_modules\/(@anthropic-ai\/sdk|undici)\/|node:internal\/deps\/undici\//],
  ["fastify", /\/node_modules\/(fastify|find-my-way|avvio|light-my-request|@fastify\/[^/]+)\//],
  ["logging (pino)", /\/node_modules\/(pino|pino-std-serializers|sonic-boom)\//],
  ["metrics (prom-client)", /\/node_modules\/prom-client\//],
  ["other libraries", /\/node_modules\//],
  ["our code", /\/(apps|packages)\/[^/]+\/(dist|src)\//],
];

/** Parts of Node named when no library above them asked for the work. */
const NODE_PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  ["HTTP/2 (Node), no library on the stack", /^node:(internal\/)?http2/],
  ["sockets (Node), no library on the stack", /^node:(internal\/)?(net|stream_base_commons|dgram|tls)\b/],
];

/** Samples no frame names: Node's own machinery (timers, microtasks, streams, events) or V8 builtins. */
const UNNAMED = "Node internals (timers, promises, streams, events)";
const GC = "garbage collection";
const PROGRAM = "V8 and native code outside JS";

/** Fraction of the window's busy samples per category (summing to 1), and how many there were. */
export interface CpuSplit {
  readonly busySamples: number;
  readonly shares: ReadonlyMap<string, number>;
}

/** Splits the samples of `file` taken between `fromUs` and `toUs` (CLOCK_MONOTONIC microseconds). */
export function splitProfile(file: string, fromUs: number, toUs: number): CpuSplit {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const categoryOf = new Map<number, string | undefined>();
  const categorize = (id: number): string | undefined => {
    if (categoryOf.has(id)) return categoryOf.get(id);
    const leaf = byId.get(id)!.callFrame.functionName;
    let category: string | undefined;
    if (leaf === "(idle)" || leaf === "(root)") category = undefined;
    else if (leaf === "(garbage collector)") category = GC;
    else if (leaf === "(program)") category = PROGRAM;
    else {
      let nodePart: string | undefined;
      for (let at: number | undefined = id; at !== undefined && category === undefined; at = parent.get(at)) {
        const url = byId.get(at)!.callFrame.url;
        if (url === "") continue;
        category = LIBRARIES.find(([, re]) => re.test(url))?.[0];
        nodePart ??= NODE_PARTS.find(([, re]) => re.test(url))?.[0];
      }
      category ??= nodePart ?? UNNAMED;
    }
    categoryOf.set(id, category);
    return category;
  };
  const counts = new Map<string, number>();
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const category = categorize(profile.samples[i]!);
    if (category === undefined) continue;
    busy += 1;
    counts.set(category, (counts.get(category) ?? 0) + 1);
  }
  const shares = new Map([...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, n / Math.max(1, busy)] as const));
  return { busySamples: busy, shares };
}

/** CLOCK_MONOTONIC now, in microseconds: the clock of V8's profile timestamps. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
