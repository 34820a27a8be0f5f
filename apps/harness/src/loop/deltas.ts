/**
 * Forwards model deltas to the session log's watchers as they stream. One publish is in flight
 * at a time; whatever arrives meanwhile goes out in the next one, so the first token leaves at
 * once and a fast stream is batched by itself, but not before the request's start is in the log
 * (`ready`). Best effort: a failed publish is logged once.
 */
import { DeltaKind, type EventDelta } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import type { LogPort } from "../log-port.js";

const MAX_BATCH = 100;

export class DeltaForwarder {
  private queue: EventDelta[] = [];
  private inFlight: Promise<void> | undefined;
  private failed = 0;

  /**
   * @param ready Deltas wait for it: the append of their request's span.model_request_start, so a
   *   watcher never sees a request's tokens before its start. Resolving false drops them (the
   *   append failed and the request is being abandoned).
   */
  constructor(
    private readonly log: LogPort,
    private readonly modelRequestId: string,
    private readonly logger: Logger,
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

  private push(kind: DeltaKind, text: string, blockIndex: number): void {
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
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.log.publishDeltas(batch);
      } catch {
        this.failed += batch.length;
      }
    }
    this.inFlight = undefined;
  }
}
