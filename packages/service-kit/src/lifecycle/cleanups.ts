/**
 * What a service started, stopped in reverse order exactly once: every `startX` pushes a step as
 * it acquires a resource, and uses `stop()` both for its handle and to undo a start that failed
 * half-way. A failing step is logged and the others still run.
 */
import type { Logger } from "../logging/logger.js";

export class Cleanups {
  private readonly steps: Array<() => Promise<unknown>> = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  push(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  /** Runs the steps, last pushed first; later calls get the same promise. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        await step().catch((err: unknown) => this.logger.warn({ err }, "error while stopping"));
      }
    })();
    return this.stopping;
  }
}
