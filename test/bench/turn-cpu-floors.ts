/**
 * The floors of the turn-cpu benchmark, measured in the same run on the same services once the
 * window's turns have ended (the services idle, the machine's other load as it is): what the
 * cheapest piece of each hop on the path to the first token costs here and now.
 * - a bare gRPC round trip to the session log: grpc.health.v1 Check on its port;
 * - a bare Postgres commit of one row: an INSERT in autocommit on the run's database (the WAL
 *   flush an append waits for);
 * - the offline model's TTFT alone through the official SDK: the call to its first text delta,
 *   split into the request's way there (the call -> the model's receipt) and the first delta's way
 *   back (the model's write -> the SDK's event), the model's own TTFT between them.
 * The share's segments are then printed as multiples of the floor each would cost if it were
 * nothing but its hops (`segmentFloors`).
 */
import Anthropic from "@anthropic-ai/sdk";
import pg from "pg";
import { healthClient } from "./lib/service.js";
import { summarize, type Summary } from "./lib/stats.js";
import { SCENARIO, type TurnStack } from "./turn-cpu-stack.js";

export interface Floors {
  /** grpc.health.v1 Check round trip to the session log, ms. */
  readonly grpc: Summary;
  /** One-row INSERT committed (autocommit) on the run's database, ms. */
  readonly commit: Summary;
  /** The SDK's call -> its first text delta, ms. */
  readonly sdkTtft: Summary;
  /** The SDK's call -> the model's receipt of the request (epoch ms, one process). */
  readonly sdkSend: Summary;
  /** The model's first delta written -> the SDK's first text delta event. */
  readonly sdkReceive: Summary;
  /** The model's own TTFT in those calls. */
  readonly modelOwn: Summary;
}

const ROUNDS = 100;
const SDK_EVERY = 5;
const WARMUP = 5;

export async function measureFloors(stack: TurnStack): Promise<Floors> {
  const health = healthClient(`127.0.0.1:${stack.log.port}`);
  const db = new pg.Client({ connectionString: stack.db.url });
  const sdk = new Anthropic({ baseURL: stack.model.url, apiKey: "offline", maxRetries: 0 });
  try {
    await db.connect();
    await db.query("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, at timestamptz NOT NULL)");
    const grpc: number[] = [];
    const commit: number[] = [];
    const sdkTtft: number[] = [];
    const sdkSend: number[] = [];
    const sdkReceive: number[] = [];
    const modelOwn: number[] = [];
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const keep = i >= WARMUP;
      let t0 = performance.now();
      await health.check();
      if (keep) grpc.push(performance.now() - t0);
      t0 = performance.now();
      await db.query("INSERT INTO bench_floor (at) VALUES (now())");
      if (keep) commit.push(performance.now() - t0);
      if (i % SDK_EVERY !== 0) continue;
      const marker = `<floor#${i}>`;
      t0 = performance.now();
      const stream = sdk.messages.stream({ model: "claude-offline-test", max_tokens: 256, messages: [{ role: "user", content: `[scenario:${SCENARIO}] ${marker}` }] });
      let first: number | undefined;
      for await (const e of stream) if (first === undefined && e.type === "content_block_delta") first = performance.now();
      const rec = stack.model.requests.findLast((r) => JSON.stringify(r.body).includes(marker));
      if (!keep || first === undefined || rec?.firstDeltaPerf === undefined) continue;
      // The offline model runs in this process: its stamps are on this clock, to the microsecond.
      sdkTtft.push(first - t0);
      sdkSend.push(rec.receivedPerf - t0);
      sdkReceive.push(first - rec.firstDeltaPerf);
      modelOwn.push(rec.firstDeltaPerf - rec.receivedPerf);
    }
    return {
      grpc: summarize(grpc),
      commit: summarize(commit),
      sdkTtft: summarize(sdkTtft),
      sdkSend: summarize(sdkSend),
      sdkReceive: summarize(sdkReceive),
      modelOwn: summarize(modelOwn),
    };
  } finally {
    health.close();
    await db.end().catch(() => undefined);
  }
}

/** A floor made of hops: `p50` and `p95` each the sum of its parts' (an upper bound of the sum's own percentile, as a reference). */
export interface Floor {
  readonly what: string;
  readonly p50: number;
  readonly p95: number;
}

const sum = (what: string, parts: ReadonlyArray<readonly [Summary, number]>): Floor => ({
  what,
  p50: parts.reduce((s, [x, k]) => s + k * x.p50, 0),
  p95: parts.reduce((s, [x, k]) => s + k * x.p95, 0),
});

/**
 * What each stretch of the share would cost if it were only its hops: the user.message's append is
 * a round trip and a commit; Wake to the model's receipt is the client's round trip to the harness,
 * the harness's AcquireLease (a round trip, the lease's commit; a short session's read comes back
 * with it) and the SDK's request on its way; the first delta to the watcher is the SDK's way back
 * and a hop through the log (PublishDeltas, the watcher's stream).
 */
export function segmentFloors(f: Floors): { emit: Floor; wakeToModel: Floor; fromModel: Floor; share: Floor } {
  const emit = sum("1 gRPC round trip + 1 commit", [[f.grpc, 1], [f.commit, 1]]);
  const wakeToModel = sum("2 gRPC round trips + 1 commit + the SDK's way there", [[f.grpc, 2], [f.commit, 1], [f.sdkSend, 1]]);
  const fromModel = sum("the SDK's way back + 1 gRPC round trip", [[f.sdkReceive, 1], [f.grpc, 1]]);
  return {
    emit,
    wakeToModel,
    fromModel,
    share: { what: "the three above", p50: emit.p50 + wakeToModel.p50 + fromModel.p50, p95: emit.p95 + wakeToModel.p95 + fromModel.p95 },
  };
}
