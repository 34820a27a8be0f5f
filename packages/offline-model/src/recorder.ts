/**
 * What tests inspect afterwards: every request the server received, its scenario step and attempt,
 * and how it ended. Bounded (the oldest records are dropped first); credentials are not kept.
 */
import type { IncomingHttpHeaders } from "node:http";
import { performance } from "node:perf_hooks";

export const DEFAULT_MAX_RECORDED_REQUESTS = 1000;
const HIDDEN_HEADERS = new Set(["x-api-key", "authorization"]);

/** `aborted`: the client went away (or the server closed) before the answer was complete. */
export type RequestOutcome = "ok" | "error" | "network" | "midstream_error" | "aborted";

export interface RecordedRequest {
  readonly seq: number;
  /** Epoch milliseconds. */
  readonly receivedAt: number;
  /**
   * performance.now() of the server's process at receipt: sub-millisecond, where `receivedAt` has
   * 1 ms steps. Comparable only with the same process's performance.now() (a benchmark that runs
   * the model beside its clients times a hop of a turn in microseconds with it).
   */
  readonly receivedPerf: number;
  readonly method: string;
  /** Path and query, e.g. `/v1/messages?beta=true`. */
  readonly url: string;
  /** Request headers, lower-case, without credentials. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  readonly scenario?: string;
  readonly step?: number;
  /** Which attempt at this step this exact request was (counted only for steps with failFirst). */
  readonly attempt?: number;
  readonly status?: number;
  readonly outcome?: RequestOutcome;
  readonly finishedAt?: number;
  /** Epoch milliseconds at which a streamed answer's first content delta was written. */
  readonly firstDeltaAt?: number;
  /** performance.now() of the server's process when that delta was written (see receivedPerf). */
  readonly firstDeltaPerf?: number;
}

export type MutableRecord = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] };

export class Recorder {
  readonly #records: MutableRecord[] = [];
  readonly #max: number;
  #seq = 0;

  constructor(max = DEFAULT_MAX_RECORDED_REQUESTS) {
    this.#max = max;
  }

  get records(): ReadonlyArray<RecordedRequest> {
    return this.#records;
  }

  start(method: string, url: string, headers: IncomingHttpHeaders, body: unknown): MutableRecord {
    const kept: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || HIDDEN_HEADERS.has(name)) continue;
      kept[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const record: MutableRecord = { seq: ++this.#seq, receivedAt: Date.now(), receivedPerf: performance.now(), method, url, headers: kept, body };
    this.#records.push(record);
    if (this.#records.length > this.#max) this.#records.splice(0, this.#records.length - this.#max);
    return record;
  }

  static firstDelta(record: MutableRecord): void {
    if (record.firstDeltaAt !== undefined) return;
    record.firstDeltaAt = Date.now();
    record.firstDeltaPerf = performance.now();
  }

  static finish(record: MutableRecord, outcome: RequestOutcome, status?: number): void {
    record.outcome = outcome;
    if (status !== undefined) record.status = status;
    record.finishedAt = Date.now();
  }
}
