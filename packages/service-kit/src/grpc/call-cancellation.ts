/**
 * A server call's cancellation for its handler: the AbortSignal a handler gets (aborted when the
 * client cancels or the deadline passes, with an MhError reason), made when the handler first
 * asks for it. Most unary handlers never do: an AbortController, its signal and a deadline timer
 * made for every call were about 1.5% of the session log's CPU per text-only turn (issue 31).
 */
import { MhError } from "@metaharness/errors";

/** The reason of every call the client cancelled (a call's signal is aborted with it): made once, not per call. */
const CLIENT_CANCELLED = new MhError("CANCELLED", "the client cancelled the call");

const deadlinePassed = (): MhError => new MhError("DEADLINE_EXCEEDED", "the call's deadline passed");

/** A cancellation or a deadline that came before the signal was asked for is its reason at once. */
export class CallCancellation {
  private controller: AbortController | undefined;
  private reason: MhError | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(private readonly deadline: Date | undefined) {}

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      const left = this.deadline === undefined ? undefined : this.deadline.getTime() - Date.now();
      if (this.reason === undefined && left !== undefined && left <= 0 && !this.done) this.reason = deadlinePassed();
      if (this.reason !== undefined) this.controller.abort(this.reason);
      else if (left !== undefined && !this.done) this.timer = setTimeout(() => this.abort(deadlinePassed()), left).unref();
    }
    return this.controller.signal;
  }

  /** The client cancelled the call, or (grpc-js ends a call whose deadline passed) the deadline passed. */
  cancelled(): void {
    const passed = this.deadline !== undefined && this.deadline.getTime() <= Date.now();
    this.abort(passed ? deadlinePassed() : CLIENT_CANCELLED);
  }

  private abort(reason: MhError): void {
    if (this.reason !== undefined || this.done) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** The call finished: a later "cancelled" (grpc-js emits one as a finished call's stream closes) is not a cancellation. */
  finish(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }
}
