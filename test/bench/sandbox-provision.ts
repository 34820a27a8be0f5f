/**
 * Sandbox broker: end-to-end gRPC latency of Provision (cold: a bwrap spawn and the agent's hello;
 * warm: taken from the pool), of Execute for `true` through the bash tool (the whole round trip:
 * gRPC, the call ledger in Postgres, the pipe to the agent, bash itself), and how many sandboxes
 * this machine holds at once, with the memory each costs. Real bubblewrap, real cgroups, real
 * Postgres. Targets from the issue: cold p50 < 50 ms and p95 < 150 ms, warm < 5 ms, execute
 * overhead p50 < 10 ms.
 *
 * Standalone: `npx tsx bench/sandbox-provision.ts` from test/ (MH_BENCH_SANDBOX_CAP sets the
 * capacity probe's cap, 500 by default). In run.ts: add `sandboxProvisionBench` to BENCHES.
 */
import { readFile } from "node:fs/promises";
import { callId, provision, startTestBroker, type BrokerClient, type TestBroker } from "../support/sandbox-broker.js";
import { atMost, LATENCY_COLUMNS, latencyCells, ms, type Bench, type BenchReport, type Check, runIfMain } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const COLD = 100;
const WARM = 100;
const EXECUTES = 500;
const WARMUP = 20;
const POOL = 4;
const CAP = Number(process.env["MH_BENCH_SANDBOX_CAP"] ?? 500);
const BATCH = 10;
const SESSION = "sesn_bench_sandbox";

async function timedProvision(client: BrokerClient): Promise<{ ms: number; id: string; warm: boolean; serverMs: number }> {
  const t0 = nowMs();
  const res = await client.provision({ fork: undefined, key: "", sessionId: SESSION, resources: undefined, handKind: "" });
  return { ms: nowMs() - t0, id: res.sandbox!.sandboxId, warm: res.warm, serverMs: res.durationMs };
}

async function release(client: BrokerClient, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += BATCH) {
    await Promise.all(ids.slice(i, i + BATCH).map((sandboxId) => client.release({ sandboxId, sessionId: "" })));
  }
}

async function cold(broker: TestBroker): Promise<{ client: Summary; server: Summary }> {
  const samples: number[] = [];
  const server: number[] = [];
  for (let i = 0; i < WARMUP + COLD; i++) {
    const p = await timedProvision(broker.client);
    if (i >= WARMUP) {
      samples.push(p.ms);
      server.push(p.serverMs);
    }
    await broker.client.release({ sandboxId: p.id, sessionId: "" });
  }
  return { client: summarize(samples), server: summarize(server) };
}

async function warm(broker: TestBroker): Promise<{ summary: Summary; misses: number }> {
  const samples: number[] = [];
  let misses = 0;
  const taken: string[] = [];
  for (let i = 0; i < WARMUP + WARM; i++) {
    // Measure the warm path itself: wait (untimed) until the pool has refilled.
    while (broker.handle.warmPool.available < POOL) await new Promise((r) => setTimeout(r, 2));
    const p = await timedProvision(broker.client);
    taken.push(p.id);
    if (i >= WARMUP) {
      samples.push(p.ms);
      if (!p.warm) misses++;
    }
    if (taken.length >= 20) await release(broker.client, taken.splice(0));
  }
  await release(broker.client, taken);
  return { summary: summarize(samples), misses };
}

async function execute(broker: TestBroker): Promise<{ roundTrip: Summary; inSandbox: Summary }> {
  const id = await provision(broker.client, SESSION);
  const roundTrip: number[] = [];
  const inSandbox: number[] = [];
  for (let i = 0; i < WARMUP + EXECUTES; i++) {
    const t0 = nowMs();
    const res = await broker.client.execute({ eventSeq: 0, sandboxId: id, name: "bash", input: { command: "true" }, callId: callId(), sessionId: "", timeoutMs: 0 });
    const elapsed = nowMs() - t0;
    if (res.isError) throw new Error(`true failed: ${res.output}`);
    if (i >= WARMUP) {
      roundTrip.push(elapsed);
      inSandbox.push(res.durationMs);
    }
  }
  await broker.client.release({ sandboxId: id, sessionId: "" });
  return { roundTrip: summarize(roundTrip), inSandbox: summarize(inSandbox) };
}

async function memAvailable(): Promise<number> {
  const text = await readFile("/proc/meminfo", "utf8");
  return Number(/^MemAvailable:\s+(\d+) kB$/m.exec(text)?.[1] ?? 0) * 1024;
}

interface Capacity {
  readonly held: number;
  readonly alive: number;
  readonly stoppedBy: string;
  readonly bytesPerSandbox: number;
  readonly seconds: number;
}

async function capacity(broker: TestBroker): Promise<Capacity> {
  const ids: string[] = [];
  const before = await memAvailable();
  const t0 = nowMs();
  let stoppedBy = `the cap of ${CAP}`;
  while (ids.length < CAP) {
    const batch = Math.min(BATCH, CAP - ids.length);
    const results = await Promise.allSettled(Array.from({ length: batch }, () => timedProvision(broker.client)));
    for (const r of results) if (r.status === "fulfilled") ids.push(r.value.id);
    const failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failure !== undefined) {
      stoppedBy = `a failed Provision: ${String((failure.reason as Error).message)}`;
      break;
    }
  }
  const seconds = (nowMs() - t0) / 1000;
  const used = before - (await memAvailable());
  let alive = 0;
  for (let i = 0; i < ids.length; i += BATCH) {
    const outs = await Promise.all(
      ids.slice(i, i + BATCH).map((sandboxId) =>
        broker.client.execute({ eventSeq: 0, sandboxId, name: "bash", input: { command: "echo ok" }, callId: callId(), sessionId: "", timeoutMs: 0 }),
      ),
    );
    alive += outs.filter((o) => o.output === "ok").length;
  }
  await release(broker.client, ids);
  return { held: ids.length, alive, stoppedBy, bytesPerSandbox: ids.length === 0 ? 0 : used / ids.length, seconds };
}

async function runBench(): Promise<BenchReport> {
  const coldBroker = await startTestBroker({ MH_MAX_SANDBOXES: String(CAP + BATCH) });
  let coldFigures;
  let exec;
  let cap;
  try {
    coldFigures = await cold(coldBroker);
    exec = await execute(coldBroker);
    cap = await capacity(coldBroker);
  } finally {
    await coldBroker.stop();
  }
  const warmBroker = await startTestBroker({ MH_WARM_POOL_SIZE: String(POOL) });
  let warmFigures;
  try {
    warmFigures = await warm(warmBroker);
  } finally {
    await warmBroker.stop();
  }
  const checks: Check[] = [
    atMost("cold Provision p50", coldFigures.client.p50, 50, "ms"),
    atMost("cold Provision p95", coldFigures.client.p95, 150, "ms"),
    atMost("warm Provision p50", warmFigures.summary.p50, 5, "ms"),
    atMost("Execute `true` round trip p50", exec.roundTrip.p50, 10, "ms"),
  ];
  const mib = (b: number): string => (b / (1024 * 1024)).toFixed(1);
  return {
    name: "sandbox-provision",
    title: "sandbox broker: Provision, Execute and capacity on real bubblewrap",
    tables: [
      {
        title: "latency, end to end over gRPC",
        columns: ["what", ...LATENCY_COLUMNS],
        rows: [
          ["Provision, cold (bwrap spawn + agent hello + insert)", ...latencyCells(coldFigures.client)],
          ["  of which inside the broker (duration_ms)", ...latencyCells(coldFigures.server)],
          [`Provision, warm pool (size ${POOL})`, ...latencyCells(warmFigures.summary)],
          ["Execute bash `true`, round trip", ...latencyCells(exec.roundTrip)],
          ["  of which in the sandbox (duration_ms, incl. bash)", ...latencyCells(exec.inSandbox)],
        ],
      },
      {
        title: "capacity: default sandboxes held at once",
        columns: ["held", "answering", "stopped by", "MiB per sandbox", "provision s"],
        rows: [[cap.held, cap.alive, cap.stoppedBy, mib(cap.bytesPerSandbox), ms(cap.seconds)]],
      },
    ],
    checks,
    notes: [
      `limits here: ${coldBroker.handle.limits}`,
      `warm samples that missed the pool: ${warmFigures.misses} of ${WARM}`,
      "MiB per sandbox is the drop in MemAvailable divided by the count (processes, page tables, tmpfs, cgroups; the broker's own growth included)",
      `capacity provisions ${BATCH} at a time, up to MH_BENCH_SANDBOX_CAP=${CAP}; every sandbox is then asked to echo`,
    ],
    data: { cold: coldFigures, warm: warmFigures, execute: exec, capacity: cap },
  };
}

export const sandboxProvisionBench: Bench = {
  name: "sandbox-provision",
  title: "sandbox broker: Provision cold/warm, Execute overhead, capacity",
  run: runBench,
};

runIfMain(sandboxProvisionBench, import.meta.url);
