/**
 * TTFT of the harness benchmark: user.message appended -> first token delta at a client that was
 * watching (include_deltas) before the message was sent, for (a) a turn that calls bash on the
 * lazy instance (ours: the sandbox is provisioned at the first tool call), (b) the same turn on
 * the eager instance (the coupled baseline: sandbox first, then the model), (c) a turn without
 * tools on the lazy instance. The three run interleaved, in a rotating order, so drift of the
 * machine's load reaches all of them alike.
 */
import { WakeOutcome } from "@metaharness/proto";
import { cpuMeter, type CpuUse } from "./lib/cpu.js";
import { summarize, type Summary } from "./lib/stats.js";
import { runTurn, type Instance, type Rig, type TurnRecord } from "./harness-rig.js";

export type SandboxTiming = "lazy" | "eager" | "none";

export interface TtftConfig {
  readonly key: string;
  readonly label: string;
  readonly scenario: string;
  readonly sandbox: SandboxTiming;
  readonly instance: (rig: Rig) => Instance;
}

export const TTFT_CONFIGS: readonly TtftConfig[] = [
  { key: "a", label: "(a) ours: text then bash, sandbox at the tool call", scenario: "ttft-bash", sandbox: "lazy", instance: (r) => r.lazy },
  { key: "b", label: "(b) coupled: same turn, sandbox before the model", scenario: "ttft-bash", sandbox: "eager", instance: (r) => r.eager },
  { key: "c", label: "(c) ours: text only, no sandbox tool", scenario: "ttft-text", sandbox: "none", instance: (r) => r.lazy },
];

export interface Excluded {
  readonly sessionId: string;
  readonly why: string;
}

export interface TtftFigures {
  readonly config: TtftConfig;
  readonly n: number;
  readonly excluded: readonly Excluded[];
  /** From the user.message's created_at (the log's clock) to the watcher's receipt. */
  readonly fromCreated: Summary;
  /** From the moment EmitEvent returned to the benchmark, to the watcher's receipt. */
  readonly fromReturn: Summary;
  /** created_at -> the offline model received the first request. */
  readonly preModel: Summary;
  /** The broker's own provisioning time (sandbox.provisioned duration_ms). */
  readonly provision: Summary;
  /** Model request received -> the harness handed the first delta on (model TTFT included). */
  readonly model: Summary;
  /** Delta handed on -> the watching client received it. */
  readonly delivery: Summary;
  readonly emit: Summary;
  readonly wake: Summary;
}

/** Why a record cannot count for `config`; undefined when it can. */
export function mismatch(rec: TurnRecord, expected: SandboxTiming): string | undefined {
  if (rec.wake.outcome !== WakeOutcome.WAKE_OUTCOME_STARTED) return `wake outcome ${WakeOutcome[rec.wake.outcome]}`;
  if (rec.wake.holder !== rec.instance.id) return `lease held by ${rec.wake.holder}, not ${rec.instance.id}`;
  const first = rec.requests[0];
  if (first === undefined) return "no model request recorded";
  const created = rec.sandboxes.map((s) => s.createdAt?.getTime() ?? NaN);
  const sandboxAt = created[0] ?? NaN;
  if (expected === "none" && created.length !== 0) return "a sandbox was provisioned";
  if (expected === "lazy" && !(created.length === 1 && sandboxAt > first.receivedAt)) return "no single sandbox after the first model request";
  if (expected === "eager" && !(created.length === 1 && sandboxAt < first.receivedAt)) return "no single sandbox before the first model request";
  return undefined;
}

function provisionMs(rec: TurnRecord): number[] {
  return rec.events.flatMap((e) => (e.payload?.$case === "sandboxProvisioned" ? [e.payload.value.durationMs] : []));
}

function figures(config: TtftConfig, records: readonly TurnRecord[]): TtftFigures {
  const excluded: Excluded[] = [];
  const kept: TurnRecord[] = [];
  for (const rec of records) {
    const why = rec.ttftFromCreated === undefined ? "no delta reached the watcher" : mismatch(rec, config.sandbox);
    if (why === undefined) kept.push(rec);
    else excluded.push({ sessionId: rec.sessionId, why });
  }
  const of = (f: (r: TurnRecord) => number): Summary => summarize(kept.map(f));
  return {
    config,
    n: kept.length,
    excluded,
    fromCreated: of((r) => r.ttftFromCreated ?? NaN),
    fromReturn: of((r) => r.ttftFromReturn ?? NaN),
    preModel: of((r) => (r.requests[0]?.receivedAt ?? NaN) - r.appendedAt),
    provision: summarize(kept.flatMap(provisionMs)),
    model: of((r) => (r.deltaEmittedAt ?? NaN) - (r.requests[0]?.receivedAt ?? NaN)),
    delivery: of((r) => (r.deltaReceivedAt ?? NaN) - (r.deltaEmittedAt ?? NaN)),
    emit: of((r) => r.emitMs),
    wake: of((r) => r.wakeMs),
  };
}

export async function measureTtft(rig: Rig, warmup: number, rounds: number): Promise<{ figures: TtftFigures[]; cpu: CpuUse }> {
  const records = new Map<string, TurnRecord[]>(TTFT_CONFIGS.map((c) => [c.key, []]));
  let meter = cpuMeter();
  for (let round = 0; round < warmup + rounds; round++) {
    if (round === warmup) meter = cpuMeter();
    for (let i = 0; i < TTFT_CONFIGS.length; i++) {
      const config = TTFT_CONFIGS[(round + i) % TTFT_CONFIGS.length]!;
      const rec = await runTurn(rig.brain, config.instance(rig), config.scenario);
      if (round >= warmup) records.get(config.key)?.push(rec);
    }
  }
  const cpu = meter.stop();
  return { figures: TTFT_CONFIGS.map((c) => figures(c, records.get(c.key) ?? [])), cpu };
}
