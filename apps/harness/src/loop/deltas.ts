/**
 * Forwards model deltas to the session log's watchers as they stream. One publish is in flight
 * at a time; whatever arrives meanwhile goes out in the next one, so the first token leaves at
 * once and a fast stream is batched by itself, but not before the request's start is in the log
 * (`ready`). Two things keep a turn's publishes few and small, the log's fan-out with them:
 * - a batch is taken once the model's bytes at hand have been parsed (the next turn of the event
 *   loop), not at the first of their deltas: the first delta of a read went out alone before, and
 *   the rest of the same read in a second PublishDeltas (two a text-only turn where one does);
 * - fragments that follow each other in one content block are sent as one delta (a delta's text
 *   is a fragment to append, so they say the same), stamped when the first was emitted: a read of
 *   40 tokens was 40 deltas, each checked, encoded and written to every watcher by the log.
 * - once the response is complete, what is still queued goes with its append (`handOver`), not
 *   in a PublishDeltas of its own: the last deltas of a stream read at once (all of a short
 *   answer) and the response's events were two calls, one after the other.
 * Best effort: a failed publish is logged once.
 */
import { setImmediate as nextLoopTurn } from "node:timers/promises";
import { DeltaKind, type EventDelta } from "@metaharness/proto";
import type { ContextLogger } from "@metaharness/service-kit/logging";
import type { LogPort } from "../log-port.js";

/** The log's limits of one PublishDeltas (session-log service.ts: MAX_DELTAS, MAX_DELTA_TEXT_BYTES). */
const MAX_BATCH = 100;
const MAX_BATCH_TEXT_BYTES = 64 * 1024;
/** A fragment is not appended to a queued delta whose text is this long: the log cuts longer ones anyway. */
const MAX_MERGED_CHARS = 1024;

export class DeltaForwarder {
  private queue: EventDelta[] = [];
  private inFlight: Promise<void> | undefined;
  private failed = 0;
  /** The response is complete: the drain sends nothing more (handOver takes the queue). */
  private handingOver = false;

  /**
   * @param ready Deltas wait for it: the append of their request's span.model_request_start, so a
   *   watcher never sees a request's tokens before its start. Resolving false drops them (the
   *   append failed and the request is being abandoned).
   */
  constructor(
    private readonly log: LogPort,
    private readonly modelRequestId: string,
    private readonly logger: ContextLogger,
    private readonly ready: Promise<boolean> = Promise.resolve(true),
  ) {}

  text(text: string, blockIndex: number): void {
    this.push(DeltaKind.DELTA_KIND_TEXT, text, blockIndex);
  }

  thinking(text: string, blockIndex: number): void {
    this.push(DeltaKind.DELTA_KIND_THINKING, text, blockIndex);
  }

  inputJson(text: string, blockIndex: number): void {
    this.push(DeltaKind.DELTA_KIND_INPUT_JSON, text, blockIndex);
  }

  /** Waits for what was queued to go out. */
  async flush(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight;
    if (this.failed > 0) this.logger.warn({ failed: this.failed }, "some token deltas could not be published");
  }

  /**
   * The response is complete (no more deltas): waits for a publish in flight, then hands what is
   * left to the log's next append (LogPort.sendWithNextAppend), the response's, if it fits one
   * call; else publishes it as before.
   */
  async handOver(): Promise<void> {
    this.handingOver = true;
    while (this.inFlight !== undefined) await this.inFlight;
    if (this.queue.length > 0 && batchLength(this.queue) === this.queue.length) this.log.sendWithNextAppend(this.queue.splice(0));
    this.handingOver = false;
    if (this.queue.length > 0) this.inFlight = this.drain();
    await this.flush();
  }

  private push(kind: DeltaKind, text: string, blockIndex: number): void {
    const last = this.queue[this.queue.length - 1];
    if (last !== undefined && last.kind === kind && last.blockIndex === blockIndex && last.text.length < MAX_MERGED_CHARS) {
      last.text += text;
      return;
    }
    this.queue.push({
      sessionId: this.log.sessionId,
      modelRequestId: this.modelRequestId,
      blockIndex,
      kind,
      text,
      emittedAt: new Date(),
    });
    if (this.inFlight === undefined) this.inFlight = this.drain();
  }

  private async drain(): Promise<void> {
    if (!(await this.ready)) {
      this.queue = [];
      this.inFlight = undefined;
      return;
    }
    // The deltas of the read being parsed are still arriving (the SDK hands them out in
    // microtasks); the I/O of the next read comes after this.
    await nextLoopTurn();
    while (!this.handingOver && this.queue.length > 0) {
      const batch = this.queue.splice(0, batchLength(this.queue));
      try {
        await this.log.publishDeltas(batch);
      } catch {
        this.failed += batch.length;
      }
    }
    this.inFlight = undefined;
  }
}

/** How many of `queue`'s first deltas one PublishDeltas takes (at least one). */
function batchLength(queue: readonly EventDelta[]): number {
  let bytes = 0;
  let n = 0;
  for (const d of queue) {
    bytes += Buffer.byteLength(d.text);
    if (n === MAX_BATCH || (n > 0 && bytes > MAX_BATCH_TEXT_BYTES)) break;
    n += 1;
  }
  return n;
}
