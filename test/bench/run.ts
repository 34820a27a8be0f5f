/**
 * Runs the benchmarks of the session log against the real service, Postgres and Kafka, one after
 * another (never in parallel: they would measure each other), prints their tables and a summary
 * of targets, and saves the run to bench/results/. `npm run bench` runs them all;
 * `npm run bench -- read outbox` runs the ones named; `npm run bench -- ttft --full` passes
 * the flag to the benchmark that reads it. Exits 1 if a benchmark failed to run; a
 * missed target is a finding to read, not a failure of the run.
 */
import { appendBench } from "./append.js";
import { appendBatchBench } from "./append-batch.js";
import { drainBench } from "./drain.js";
import { egressBench } from "./egress.js";
import { harnessBench } from "./harness.js";
import { harnessScaleBench } from "./harness-scale.js";
import { gatewayTurnBench } from "./gateway-turn.js";
import { brainReachBench } from "./brain-reach.js";
import { formatFacts, machineFacts } from "./lib/machine.js";
import { checksTable, formatReport, formatTable, writeResults, type Bench, type BenchReport } from "./lib/report.js";
import { outboxBench } from "./outbox.js";
import { readBench } from "./read.js";
import { requestCpuBench } from "./request-cpu.js";
import { recoveryBench } from "./recovery.js";
import { sandboxProvisionBench } from "./sandbox-provision.js";
import { layersBench } from "./layers.js";
import { contextBench } from "./context.js";
import { ttftBench } from "./ttft-sweep.js";
import { turnCpuBench } from "./turn-cpu.js";
import { sessionStepsBench } from "./session-steps.js";
import { workspacesBench } from "./workspaces.js";
import { longSessionBench } from "./long-session.js";

const BENCHES: readonly Bench[] = [appendBench, appendBatchBench, readBench, outboxBench, drainBench, sandboxProvisionBench, layersBench, egressBench, harnessBench, recoveryBench, contextBench, ttftBench, turnCpuBench, sessionStepsBench, harnessScaleBench, gatewayTurnBench, brainReachBench, workspacesBench, longSessionBench, requestCpuBench];

function select(names: readonly string[]): Bench[] {
  if (names.length === 0) return [...BENCHES];
  const unknown = names.filter((n) => !BENCHES.some((b) => b.name === n));
  if (unknown.length > 0) {
    throw new Error(`unknown benchmark ${unknown.join(", ")}; known: ${BENCHES.map((b) => b.name).join(", ")}`);
  }
  return BENCHES.filter((b) => names.includes(b.name));
}

async function main(): Promise<void> {
  // Flags (`--full`) are the benchmarks' own, read from process.argv by those that take them.
  const benches = select(process.argv.slice(2).filter((a) => !a.startsWith("--")));
  const facts = await machineFacts();
  console.log(formatFacts(facts));
  const started = Date.now();
  const reports: BenchReport[] = [];
  for (const bench of benches) {
    const t0 = Date.now();
    console.log(`\n>> ${bench.name} ...`);
    const report = await bench.run();
    reports.push(report);
    console.log(`\n${formatReport(report)}\n  (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
  const checks = reports.flatMap((r) => r.checks.map((c) => ({ ...c, what: `${r.name}: ${c.what}` })));
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n${formatTable(checksTable(`summary (${seconds.toFixed(0)} s)`, checks))}`);
  const file = await writeResults({ startedAt: new Date(started).toISOString(), seconds, facts, reports });
  console.log(`\nresults: ${file}`);
}

main().then(
  // Kafka and gRPC clients may hold timers for a while after close; the run is over.
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
