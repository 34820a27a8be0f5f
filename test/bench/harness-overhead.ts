/**
 * Harness overhead per turn, the model's own latency excluded: turns against the offline model
 * with no pacing (ttftMs 0, tokensPerSecond 0), (i) text only and (ii) one bash call then a final
 * answer, on the lazy instance. Wall time is user.message -> session.status_idle, both created_at
 * of the log. The model's part is taken two ways:
 *  - server: what the offline model's recorder says each request took (handler entry to the end
 *    of the stream, ms clock), so the overhead keeps the SDK's client-side work;
 *  - client: each request of the turn replayed afterwards through the same model client the
 *    harness uses (@metaharness/model-client, the real SDK over HTTP), timed around the call, so
 *    the overhead is only what the harness adds around the SDK call.
 * The turn is also cut at its events into segments, to show where the time goes.
 */
import { performance } from "node:perf_hooks";
import { createModelClient, type StreamParams } from "@metaharness/model-client";
import { cpuMeter, type CpuUse } from "./lib/cpu.js";
import { summarize, type Summary } from "./lib/stats.js";
import { at, runTurn, type Rig, type TurnRecord } from "./harness-rig.js";
import { mismatch, type Excluded, type SandboxTiming } from "./harness-ttft.js";

export interface OverheadKind {
  readonly key: string;
  readonly label: string;
  readonly scenario: string;
  readonly requests: number;
  readonly sandbox: SandboxTiming;
}

export const OVERHEAD_KINDS: readonly OverheadKind[] = [
  { key: "text", label: "(i) text only", scenario: "ovh-text", requests: 1, sandbox: "none" },
  { key: "bash", label: "(ii) one bash call, then the answer", scenario: "ovh-bash", requests: 2, sandbox: "lazy" },
];

export interface Segment {
  readonly name: string;
  readonly summary: Summary;
}

export interface OverheadFigures {
  readonly kind: OverheadKind;
  readonly n: number;
  readonly excluded: readonly Excluded[];
  readonly wall: Summary;
  readonly server: Summary;
  readonly overheadServer: Summary;
  readonly replay: Summary;
  readonly overheadClient: Summary;
  /** Distinct created_at among the harness's own events: its EmitEvents calls (a lower bound). */
  readonly appends: Summary;
  readonly segments: readonly Segment[];
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

function serverMs(rec: TurnRecord): number {
  return sum(rec.requests.map((r) => (r.finishedAt ?? NaN) - r.receivedAt));
}

function appends(rec: TurnRecord): number {
  const own = rec.events.filter((e) => e.type !== "user.message" && !e.type.startsWith("sandbox."));
  return new Set(own.map((e) => e.createdAt?.getTime())).size;
}

/** The turn cut at its events; the segments add up to the wall time. */
function segments(rec: TurnRecord): Array<[string, number]> {
  const ev = rec.events;
  const starts = rec.requests.map((_, k) => at(ev, "span.model_request_start", k));
  const ends = rec.requests.map((_, k) => at(ev, "span.model_request_end", k));
  const toolResult = at(ev, "agent.tool_result");
  const rows: Array<[string, number]> = [
    ["Wake RPC, lease, session read -> status_running appended", at(ev, "session.status_running") - rec.appendedAt],
    ["status_running -> model_request_start appended", (starts[0] ?? NaN) - at(ev, "session.status_running")],
    ["model_request_start -> request at the model (context, SDK, HTTP)", sum(rec.requests.map((r, k) => r.receivedAt - (starts[k] ?? NaN)))],
    ["model server (offline, unpaced)", serverMs(rec)],
    ["model done -> response appended (SDK end, deltas, append)", sum(rec.requests.map((r, k) => (ends[k] ?? NaN) - (r.finishedAt ?? NaN)))],
  ];
  if (rec.requests.length > 1) {
    const provision = rec.events.flatMap((e) => (e.payload?.$case === "sandboxProvisioned" ? [e.payload.value.durationMs] : []));
    rows.push(
      ["tool: response appended -> tool_result appended", toolResult - (ends[0] ?? NaN)],
      ["  of which cold sandbox provision (broker duration_ms)", sum(provision)],
      ["tool_result -> next model_request_start appended", (starts[1] ?? NaN) - toolResult],
    );
  }
  rows.push(["last response -> status_idle appended", at(ev, "session.status_idle") - (ends[ends.length - 1] ?? NaN)]);
  return rows;
}

/** Each recorded request of the turn, replayed through a fresh model client; ms per turn. */
async function replay(rig: Rig, records: readonly TurnRecord[]): Promise<number[]> {
  const client = createModelClient({ apiKey: "offline", model: "claude-offline-test", baseURL: rig.brain.model.url, retry: { maxAttempts: 1 } });
  const call = async (body: unknown): Promise<number> => {
    const { stream: _stream, ...params } = body as Record<string, unknown>;
    const t0 = performance.now();
    await client.streamMessage(params as unknown as StreamParams, { onTextDelta: () => undefined, onInputJsonDelta: () => undefined });
    return performance.now() - t0;
  };
  // Warm the client's connection and the SDK's code paths first.
  for (const rec of records.slice(0, 5)) for (const r of rec.requests) await call(r.body);
  const out: number[] = [];
  for (const rec of records) {
    let ms = 0;
    for (const r of rec.requests) ms += await call(r.body);
    out.push(ms);
  }
  return out;
}

async function figures(rig: Rig, kind: OverheadKind, records: readonly TurnRecord[]): Promise<OverheadFigures> {
  const excluded: Excluded[] = [];
  const kept: TurnRecord[] = [];
  for (const rec of records) {
    const ok = rec.requests.length === kind.requests && rec.requests.every((r) => r.outcome === "ok");
    const why = ok ? mismatch(rec, kind.sandbox) : `${rec.requests.length} model requests, expected ${kind.requests}`;
    if (why === undefined) kept.push(rec);
    else excluded.push({ sessionId: rec.sessionId, why });
  }
  const wall = kept.map((r) => at(r.events, "session.status_idle") - r.appendedAt);
  const server = kept.map(serverMs);
  const replayed = await replay(rig, kept);
  const cut = kept.map(segments);
  const names = cut[0]?.map(([name]) => name) ?? [];
  return {
    kind,
    n: kept.length,
    excluded,
    wall: summarize(wall),
    server: summarize(server),
    overheadServer: summarize(wall.map((w, i) => w - (server[i] ?? NaN))),
    replay: summarize(replayed),
    overheadClient: summarize(wall.map((w, i) => w - (replayed[i] ?? NaN))),
    appends: summarize(kept.map(appends)),
    segments: names.map((name, i) => ({ name, summary: summarize(cut.map((rows) => rows[i]?.[1] ?? NaN)) })),
  };
}

export async function measureOverhead(rig: Rig, warmup: number, turns: number): Promise<{ figures: OverheadFigures[]; cpu: CpuUse }> {
  const records = new Map<string, TurnRecord[]>(OVERHEAD_KINDS.map((k) => [k.key, []]));
  let meter = cpuMeter();
  for (let round = 0; round < warmup + turns; round++) {
    if (round === warmup) meter = cpuMeter();
    for (let i = 0; i < OVERHEAD_KINDS.length; i++) {
      const kind = OVERHEAD_KINDS[(round + i) % OVERHEAD_KINDS.length]!;
      const rec = await runTurn(rig.brain, rig.lazy, kind.scenario);
      if (round >= warmup) records.get(kind.key)?.push(rec);
    }
  }
  const cpu = meter.stop();
  const out: OverheadFigures[] = [];
  for (const kind of OVERHEAD_KINDS) out.push(await figures(rig, kind, records.get(kind.key) ?? []));
  return { figures: out, cpu };
}
