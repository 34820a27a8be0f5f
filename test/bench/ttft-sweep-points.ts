/**
 * One point of the TTFT sweep (a model TTFT, a repository, a number of concurrent sessions),
 * measured in both modes: rounds alternate coupled and decoupled (in a rotating order), and in
 * each round `concurrency` workers each run turns back to back, half of the sessions text only
 * (they never touch a sandbox), half calling bash in their first turn. A turn's TTFT is from the
 * moment the client sent the user.message to the first token delta at a client that watched the
 * session before; the model's own TTFT (the offline model's receipt of the request to its first
 * delta written) is subtracted per session for the platform's share. With a package layer not
 * cached, every session of a round names a set new in that round and mode, so the first of them
 * to provision builds it and the others wait for that build.
 */
import type { Event } from "@metaharness/proto";
import { cpuMeter, type CpuUse } from "./lib/cpu.js";
import type { RepoSpec } from "./lib/bench-repos.js";
import { summarize, type Summary } from "./lib/stats.js";
import { runTurn, type Instance, type TurnRecord } from "./harness-rig.js";
import { mismatch, type SandboxTiming } from "./harness-ttft.js";
import { KINDS, scenarioName, type LayerKind, type SessionKind, type SweepRig } from "./ttft-sweep-rig.js";

export type Mode = "decoupled" | "coupled";
export const MODES: readonly Mode[] = ["decoupled", "coupled"];

export interface SweepPoint {
  readonly ttftMs: number;
  readonly repo: RepoSpec;
  readonly concurrency: number;
  /** The sessions' package layer: none, built before the rounds, or built by the round's first session that needs it. */
  readonly layer: LayerKind;
}

/** Where one turn's TTFT went, epoch ms (one clock: every service runs in this process). */
export interface Segments {
  /** EmitEvent(user.message) round trip, client. */
  readonly append: number;
  /** Wake RPC round trip, client: the harness takes the lease. */
  readonly wake: number;
  /** Wake returned -> request at the model: the session read, bookkeeping, (coupled: the sandbox), context, SDK, HTTP. */
  readonly toModel: number;
  /** The model's own TTFT: request received -> first delta written. */
  readonly model: number;
  /** First delta written -> handed to PublishDeltas by the harness (HTTP, SDK parse, forwarder). */
  readonly handOn: number;
  /** Handed on -> received by the watching client (the log's fan-out). */
  readonly delivery: number;
}

export interface Sample {
  readonly sessionId: string;
  readonly mode: Mode;
  readonly kind: SessionKind;
  readonly ttft: number;
  readonly overhead: number;
  readonly segments: Segments;
  /** The broker's provisioning time of the sandbox provisioned before the model (coupled), ms. */
  readonly provisionMs: number | undefined;
}

export interface ModeFigures {
  readonly mode: Mode;
  readonly samples: readonly Sample[];
  readonly excluded: ReadonlyArray<{ readonly sessionId: string; readonly why: string }>;
  readonly ttft: Summary;
  readonly overhead: Summary;
  /** Wall time of this mode's rounds and the CPU used meanwhile. */
  readonly wallMs: number;
  readonly cpu: CpuUse;
  readonly turns: number;
}

export interface PointFigures {
  readonly point: SweepPoint;
  readonly modes: readonly ModeFigures[];
  /** The load average (1 min) when the point started and ended. */
  readonly load: readonly [number, number];
}

const expected = (mode: Mode, kind: SessionKind): SandboxTiming => (mode === "coupled" ? "eager" : kind === "bash" ? "lazy" : "none");

function repositoryError(events: readonly Event[]): string | undefined {
  const e = events.find((x) => x.payload?.$case === "sessionError" && x.payload.value.error?.type.startsWith("repository_") === true);
  return e?.payload?.$case === "sessionError" ? `the repository did not clone: ${e.payload.value.error?.message ?? "?"}` : undefined;
}

function sample(rec: TurnRecord, mode: Mode, kind: SessionKind): Sample | { why: string } {
  const why = rec.ttftFromSend === undefined ? "no delta reached the watcher" : (mismatch(rec, expected(mode, kind)) ?? repositoryError(rec.events));
  if (why !== undefined) return { why };
  const first = rec.requests[0]!;
  const model = (first.firstDeltaAt ?? NaN) - first.receivedAt;
  const ttft = rec.ttftFromSend ?? NaN;
  const provision = mode === "coupled" ? rec.events.find((e) => e.payload?.$case === "sandboxProvisioned") : undefined;
  return {
    sessionId: rec.sessionId,
    mode,
    kind,
    ttft,
    overhead: ttft - model,
    segments: {
      append: rec.clock.returnedAt - rec.clock.sentAt,
      wake: rec.clock.wokenAt - rec.clock.returnedAt,
      toModel: first.receivedAt - rec.clock.wokenAt,
      model,
      handOn: (rec.deltaEmittedAt ?? NaN) - (first.firstDeltaAt ?? NaN),
      delivery: (rec.deltaReceivedAt ?? NaN) - (rec.deltaEmittedAt ?? NaN),
    },
    provisionMs: provision?.payload?.$case === "sandboxProvisioned" ? provision.payload.value.durationMs : undefined,
  };
}

const load1 = async (): Promise<number> => (await import("node:os")).loadavg()[0] ?? NaN;

/** Runs `rounds` rounds of each mode at `point`; each worker runs `turnsPerWorker` turns per round. */
export async function measurePoint(rig: SweepRig, point: SweepPoint, rounds: number, turnsPerWorker: number, timeoutMs: number): Promise<PointFigures> {
  const loadBefore = await load1();
  const acc = new Map<Mode, { samples: Sample[]; excluded: Array<{ sessionId: string; why: string }>; wallMs: number; cpu: CpuUse[]; turns: number }>(
    MODES.map((m) => [m, { samples: [], excluded: [], wallMs: 0, cpu: [], turns: 0 }]),
  );
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      const instance: Instance = mode === "coupled" ? rig.coupled : rig.decoupled;
      const into = acc.get(mode)!;
      // Every session of the round names the same packages: with a layer not cached, a set new in this round and mode.
      const packages = rig.packages(point.layer);
      const meter = cpuMeter();
      const t0 = Date.now();
      await Promise.all(
        Array.from({ length: point.concurrency }, async (_, worker) => {
          for (let j = 0; j < turnsPerWorker; j++) {
            const kind = KINDS[(worker + j + round) % KINDS.length]!;
            into.turns += 1;
            let rec: TurnRecord;
            try {
              rec = await runTurn(rig.brain, instance, scenarioName(point.ttftMs, kind), { newSession: () => rig.newSession(point.repo, packages), timeoutMs });
            } catch (err) {
              // A turn that never ended (e.g. a lease lost on a saturated machine) is counted, not fatal.
              into.excluded.push({ sessionId: "?", why: err instanceof Error ? err.message.slice(0, 300) : String(err) });
              continue;
            }
            const s = sample(rec, mode, kind);
            if ("why" in s) into.excluded.push({ sessionId: rec.sessionId, why: s.why });
            else into.samples.push(s);
          }
        }),
      );
      into.wallMs += Date.now() - t0;
      into.cpu.push(meter.stop());
    }
  }
  const modes = MODES.map((mode): ModeFigures => {
    const a = acc.get(mode)!;
    return {
      mode,
      samples: a.samples,
      excluded: a.excluded,
      ttft: summarize(a.samples.map((s) => s.ttft)),
      overhead: summarize(a.samples.map((s) => s.overhead)),
      wallMs: a.wallMs,
      cpu: meanCpu(a.cpu),
      turns: a.turns,
    };
  });
  return { point, modes, load: [loadBefore, await load1()] };
}

/** The rounds' CPU use, averaged (each round's percentages are over its own window). */
function meanCpu(xs: readonly CpuUse[]): CpuUse {
  const avg = (f: (c: CpuUse) => number): number => xs.reduce((s, c) => s + f(c), 0) / Math.max(1, xs.length);
  return {
    cores: xs[0]?.cores ?? 0,
    machine: avg((c) => c.machine),
    self: avg((c) => c.self),
    service: avg((c) => c.service),
    postgres: avg((c) => c.postgres),
    kafka: avg((c) => c.kafka),
    other: avg((c) => c.other),
  };
}
