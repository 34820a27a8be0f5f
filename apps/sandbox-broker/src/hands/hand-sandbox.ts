/**
 * A sandbox bound to an external hand: the same runtime contract as a bubblewrap sandbox, so
 * Execute, the ledger, the reaper and Release treat both alike. The hand enforces nothing of ours
 * (its `limits` is empty); the broker still bounds how long it waits and how much output it keeps.
 */
import { externalDriver } from "@metaharness/proto";
import type { RuntimeCall, SandboxRuntime } from "../runtime.js";
import { SandboxGoneError } from "../protocol/agent-channel.js";
import { capText } from "../tools/output.js";
import { failed, type ToolOutcome } from "../tools/types.js";
import type { ConnectedHand } from "./registry.js";

export class HandSandbox implements SandboxRuntime {
  readonly driver: string;
  readonly limits = "";
  readonly lost: Promise<string>;
  private stopped: string | undefined;
  private running = 0;

  constructor(
    private readonly id: string,
    private readonly hand: ConnectedHand,
    private readonly outputCapBytes: number,
  ) {
    this.driver = externalDriver(hand.kind);
    hand.bound++;
    // Never settles after stop(): a released sandbox is not lost when its hand leaves later.
    this.lost = new Promise((resolve) => {
      void hand.closed.then((reason) => {
        if (this.stopped === undefined) resolve(reason);
      });
    });
  }

  get inFlight(): number {
    return this.running;
  }

  async execute(call: RuntimeCall): Promise<ToolOutcome> {
    if (this.stopped !== undefined) throw new SandboxGoneError(`sandbox ${this.id} was released: ${this.stopped}`);
    if (!this.hand.tools.has(call.name)) {
      return failed(`unknown tool "${call.name}": hand ${this.hand.handId} offers ${[...this.hand.tools].join(", ")}`);
    }
    this.running++;
    try {
      const result = await this.hand.call(this.id, call.callId, call.name, call.input, call.timeoutMs);
      if (result === "timeout") {
        return failed(`hand ${this.hand.handId} (${this.hand.kind}) did not answer within ${call.timeoutMs} ms`);
      }
      const { text, truncated } = capText(result.output, this.outputCapBytes);
      return { output: text, isError: result.isError, exitCode: result.isError ? 1 : 0, truncated };
    } finally {
      this.running--;
    }
  }

  stop(reason: string): Promise<void> {
    if (this.stopped === undefined) {
      this.stopped = reason;
      this.hand.bound--;
    }
    return Promise.resolve();
  }
}
