/**
 * Group commit for appends: concurrent EmitEvent/EmitEvents calls (any sessions) are written
 * together by one mh_append statement (append.ts) as soon as the previous batch is done, so under
 * load a commit, its WAL flush and a round trip serve many appends instead of one each (measured
 * in test/bench/append.ts). Each call still gets its own result or error.
 */
import { WriteBatcher, type Db } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import { secondsSince } from "@metaharness/telemetry";
import { appendBatchSize, appendDuration } from "../metrics.js";
import { appendBatch, type Announce, type AppendRequest, type AppendResult } from "./append.js";

/** Events per batch: a request of MAX_BATCH (1000) events goes alone. */
const MAX_BATCH_EVENTS = 1000;
const MAX_BATCH_REQUESTS = 1000;
/** Batches written at once: one on the wire while the next one gathers. */
const MAX_IN_FLIGHT = 1;

export class Appender {
  private readonly batcher: WriteBatcher<AppendRequest, AppendResult>;

  /**
   * `announce`: asked per batch where its commit announces itself (a null channel while no other
   * instance is there). `maxQueued`: calls waiting for a batch beyond it are refused
   * (RESOURCE_EXHAUSTED) rather than queued without bound.
   */
  constructor(db: Db, announce: () => Announce, maxQueued: number) {
    this.batcher = new WriteBatcher({
      write: async (requests) => {
        const started = performance.now();
        appendBatchSize.record(requests.reduce((n, r) => n + r.events.length, 0));
        try {
          const results = await appendBatch(db, requests, announce());
          appendDuration.record(secondsSince(started), { outcome: "ok" });
          return results;
        } catch (err) {
          appendDuration.record(secondsSince(started), { outcome: MhError.from(err).code });
          throw err;
        }
      },
      maxItems: MAX_BATCH_REQUESTS,
      maxWeight: MAX_BATCH_EVENTS,
      weigh: (r) => r.events.length,
      maxInFlight: MAX_IN_FLIGHT,
      maxQueued,
    });
  }

  append(request: AppendRequest): Promise<AppendResult> {
    return this.batcher.write(request);
  }
}
