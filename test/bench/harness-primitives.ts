/**
 * What the session-log calls a turn is made of cost one at a time, on the same log, measured from
 * this process over gRPC like the harness's own calls, and the broker calls of a first sandbox
 * tool call besides Provision: to read the overhead of a turn as "so many appends, a lease, a
 * read" rather than as one opaque number.
 */
import { performance } from "node:perf_hooks";
import { DeltaKind } from "@metaharness/proto";
import { callId, provision } from "../support/sandbox-broker.js";
import { benchEvent } from "./lib/service.js";
import { summarize, type Summary } from "./lib/stats.js";
import type { Rig } from "./harness-rig.js";

const WARMUP = 10;
const SAMPLES = 50;

export interface Primitive {
  readonly name: string;
  readonly summary: Summary;
}

async function sample(op: () => Promise<unknown>): Promise<Summary> {
  const out: number[] = [];
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const t0 = performance.now();
    await op();
    if (i >= WARMUP) out.push(performance.now() - t0);
  }
  return summarize(out);
}

export async function measurePrimitives(rig: Rig): Promise<Primitive[]> {
  const log = rig.brain.log.client;
  const sessionId = await rig.brain.createSession();
  const leased = await rig.brain.createSession();
  const holder = "bench-primitives";
  await log.emitEvents({ sessionId: leased, events: Array.from({ length: 8 }, benchEvent) });
  const broker = rig.brain.broker!.client;
  const sandboxId = await provision(broker, sessionId);
  const delta = { sessionId, modelRequestId: "bench", blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "word ", emittedAt: new Date() };
  const out: Primitive[] = [
    { name: "EmitEvents, 1 event (status_running, model_request_start, idle...)", summary: await sample(() => log.emitEvents({ sessionId, events: [benchEvent()] })) },
    { name: "EmitEvents, 2 events (agent.message + model_request_end)", summary: await sample(() => log.emitEvents({ sessionId, events: [benchEvent(), benchEvent()] })) },
    {
      name: "AcquireLease + ReleaseLease",
      summary: await sample(async () => {
        const { lease } = await log.acquireLease({ sessionId: leased, holder, ttlMs: 1000 });
        await log.releaseLease({ sessionId: leased, holder, epoch: lease?.epoch ?? 0 });
      }),
    },
    { name: "GetSession", summary: await sample(() => log.getSession({ sessionId })) },
    {
      name: "GetEvents after seq 0 (a short session, 8 events)",
      summary: await sample(() => log.getEvents({ sessionId: leased, position: { $case: "afterSeq", value: 0 }, limit: 1000, types: [] })),
    },
    { name: "PublishDeltas, 1 delta", summary: await sample(() => log.publishDeltas({ sessionId, deltas: [delta] })) },
    { name: "broker ListSandboxes (a session with none)", summary: await sample(() => broker.listSandboxes({ sessionId: leased, includeEnded: false })) },
    {
      name: "broker Execute bash `echo ok` (warm sandbox)",
      summary: await sample(() => broker.execute({ eventSeq: 0, sandboxId, name: "bash", input: { command: "echo ok" }, callId: callId(), sessionId, timeoutMs: 0 })),
    },
  ];
  await broker.release({ sandboxId, sessionId });
  return out;
}
