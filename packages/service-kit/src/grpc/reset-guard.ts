/**
 * A client channel that keeps each of its connections inside the server's allowance of stream
 * resets, so a client that ends many calls itself is never disconnected for it.
 *
 * Why: our servers (grpc-js over Node 20's http2, nghttp2 1.61) allow a client connection 1,000
 * RST_STREAM frames, then 33 a second: a token bucket per connection (nghttp2's rapid-reset
 * defence: every incoming RST_STREAM takes a token; at each new whole second of the server's clock
 * 33 tokens per second passed are added, up to 1,000). Past it the server sends GOAWAY
 * INTERNAL_ERROR and Node closes the session, failing every call on it, long-lived streams
 * included ("Received RST_STREAM with code 2 ... Session closed with error code 2"). Node 20 cannot
 * raise it (`streamResetBurst`/`streamResetRate` came later) and grpc-js would not pass it on.
 * A client sends RST_STREAM for each call it ends itself: cancelled (a stream left early, an
 * aborted signal), past a client-side deadline, or a response it refuses (too large,
 * undecodable). A call the server ends costs nothing, whatever its status (tried with grpc-js:
 * 1,500 unary calls, normal stream ends and NOT_FOUND answers in a few seconds pass; cancels and
 * deadlines fail at ~1,100).
 *
 * What: calls go to a lane, a grpc-js channel with a subchannel pool of its own (so one
 * connection, never shared with another client's channel). Each lane mirrors the server's bucket,
 * counting as a reset every call that ended with a status a client-side end gives (CANCELLED,
 * DEADLINE_EXCEEDED, and RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN for a refused response), whoever
 * sent it: a status the server sent is counted too, which only moves calls on sooner. A new call
 * goes to the current lane while its tokens, less one for every call in flight there (each may
 * still end with a reset) and one for itself, stay at or above MARGIN; otherwise it goes to a fresh
 * lane (a new connection with a full bucket, made when the lane came within PREPARE tokens of the
 * margin, so it is connected by then) and the old lane drains: its calls finish there, and its
 * channel is closed when the last has ended. Closing a grpc-js channel closes its connection
 * gracefully (the subchannel's transport calls http2 session.close(), which lets open streams
 * finish); reset-guard.test keeps a stream open across the close.
 *
 * The mirror errs low: it refills continuously at RATE_PER_S (30) where the server adds 33 a
 * second at whole seconds, so the server's count is at most one second's 33 tokens behind a
 * continuous one, which the MARGIN of 100 covers. A connection that drops and reconnects gets a
 * fresh bucket the mirror does not see (it then errs low again). Cost per call: one wrapper
 * object, a counter up and down and a comparison; the clock is read only when a lane's count
 * nears the margin and when a call ends with a reset.
 */
import {
  Channel as ChannelImplementation,
  type ChannelCredentials,
  type ChannelInterface,
  type ChannelOptions,
  type InterceptingListener,
  type Metadata,
  type StatusObject,
  status as Status,
  type experimental,
} from "@grpc/grpc-js";
import { withoutStackTraces } from "./without-stack-traces.js";

/** The server's allowance (nghttp2's NGHTTP2_DEFAULT_STREAM_RESET_BURST). */
export const SERVER_RESET_BURST = 1_000;
/** Tokens the mirror adds a second: under the server's 33 (NGHTTP2_DEFAULT_STREAM_RESET_RATE). */
export const RESET_RATE_PER_S = 30;
/** Tokens a lane keeps unspent, beyond one per call in flight: the server's second of lag and slack. */
export const RESET_MARGIN = 100;
/** How far above the margin the next lane is made and starts to connect. */
export const RESET_PREPARE = 200;

type CallStream = experimental.CallStream;
type CreateCall = ChannelInterface["createCall"];

/** One channel (one connection) and its mirror of the server's reset bucket. */
class Lane {
  tokens = SERVER_RESET_BURST;
  stamp = performance.now();
  inflight = 0;
  draining = false;

  constructor(
    readonly channel: ChannelInterface,
    private readonly owner: ResetGuardedChannel,
  ) {}

  /** Tokens left after every call in flight here ended with a reset, with the refill up to now. */
  room(): number {
    const now = performance.now();
    this.tokens = Math.min(SERVER_RESET_BURST, this.tokens + ((now - this.stamp) * RESET_RATE_PER_S) / 1000);
    this.stamp = now;
    return this.tokens - this.inflight;
  }

  ended(code: Status): void {
    this.inflight -= 1;
    if (countsAsReset(code)) {
      this.room();
      this.tokens -= 1;
    }
    if (this.draining && this.inflight === 0) this.owner.retire(this);
  }
}

/** Whether a call that ended with `code` may have been ended by this client (so with RST_STREAM). */
function countsAsReset(code: Status): boolean {
  return (
    code === Status.CANCELLED ||
    code === Status.DEADLINE_EXCEEDED ||
    code === Status.RESOURCE_EXHAUSTED ||
    code === Status.INTERNAL ||
    code === Status.UNKNOWN
  );
}

/** A grpc-js channel (as ClientOptions.channelFactoryOverride) that spreads calls over lanes. */
export class ResetGuardedChannel implements ChannelInterface {
  private current: Lane;
  private next: Lane | undefined;
  private readonly draining = new Set<Lane>();
  private closed = false;

  constructor(
    private readonly target: string,
    private readonly credentials: ChannelCredentials,
    private readonly options: ChannelOptions,
  ) {
    this.current = this.lane();
  }

  createCall(...args: Parameters<CreateCall>): CallStream {
    let lane = this.current;
    // The count only grows by refill, so a stale count above the threshold is above it now.
    if (lane.tokens - lane.inflight <= RESET_MARGIN + RESET_PREPARE + 1) lane = this.laneWithRoom();
    const call = lane.channel.createCall(...args);
    lane.inflight += 1;
    return new LaneCall(call, lane);
  }

  /** How many connections this channel holds open or opening (the current, the next, draining). */
  lanes(): number {
    return 1 + (this.next === undefined ? 0 : 1) + this.draining.size;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.current.channel.close();
    this.next?.channel.close();
    for (const lane of this.draining) lane.channel.close();
    this.draining.clear();
  }

  getTarget(): string {
    return this.current.channel.getTarget();
  }

  getConnectivityState(tryToConnect: boolean): ReturnType<ChannelInterface["getConnectivityState"]> {
    return this.current.channel.getConnectivityState(tryToConnect);
  }

  watchConnectivityState(...args: Parameters<ChannelInterface["watchConnectivityState"]>): void {
    this.current.channel.watchConnectivityState(...args);
  }

  getChannelzRef(): ReturnType<ChannelInterface["getChannelzRef"]> {
    return this.current.channel.getChannelzRef();
  }

  /** Called by a draining lane once its last call has ended. */
  retire(lane: Lane): void {
    if (!this.draining.delete(lane)) return;
    lane.channel.close();
  }

  private laneWithRoom(): Lane {
    const room = this.current.room() - 1;
    if (this.closed || room >= RESET_MARGIN + RESET_PREPARE) return this.current;
    if (this.next === undefined) {
      this.next = this.lane();
      // Start connecting now, so the calls moved to it do not wait for the handshake.
      this.next.channel.getConnectivityState(true);
    }
    if (room >= RESET_MARGIN) return this.current;
    const old = this.current;
    this.current = this.next;
    this.next = undefined;
    old.draining = true;
    this.draining.add(old);
    if (old.inflight === 0) this.retire(old);
    return this.current;
  }

  private lane(): Lane {
    const channel = new ChannelImplementation(this.target, this.credentials, {
      ...this.options,
      "grpc.use_local_subchannel_pool": 1,
    });
    return new Lane(channel, this);
  }
}

/**
 * A call on a lane: passes everything through, and tells the lane how the call ended. The
 * CANCELLED status of a call cancelled from above (a stream left, an aborted signal) reaches the
 * client without stack traces: grpc-js makes it an Error and formats its stack, which says only
 * where grpc-js delivered it (once per event stream a client leaves, issue 31).
 */
class LaneCall implements CallStream, InterceptingListener {
  private listener: InterceptingListener | undefined;
  private done = false;
  private cancelled = false;

  constructor(
    private readonly call: CallStream,
    private readonly lane: Lane,
  ) {}

  start(metadata: Metadata, listener: InterceptingListener): void {
    this.listener = listener;
    this.call.start(metadata, this);
  }

  onReceiveMetadata(metadata: Metadata): void {
    this.listener?.onReceiveMetadata(metadata);
  }

  onReceiveMessage(message: unknown): void {
    this.listener?.onReceiveMessage(message);
  }

  onReceiveStatus(status: StatusObject): void {
    if (!this.done) {
      this.done = true;
      this.lane.ended(status.code);
    }
    const listener = this.listener;
    if (listener === undefined) return;
    if (this.cancelled && status.code === Status.CANCELLED) withoutStackTraces(() => listener.onReceiveStatus(status));
    else listener.onReceiveStatus(status);
  }

  cancelWithStatus(code: Status, details: string): void {
    if (code === Status.CANCELLED) this.cancelled = true;
    this.call.cancelWithStatus(code, details);
  }

  getPeer(): string {
    return this.call.getPeer();
  }

  sendMessageWithContext(...args: Parameters<CallStream["sendMessageWithContext"]>): void {
    this.call.sendMessageWithContext(...args);
  }

  startRead(): void {
    this.call.startRead();
  }

  halfClose(): void {
    this.call.halfClose();
  }

  getCallNumber(): number {
    return this.call.getCallNumber();
  }

  setCredentials(...args: Parameters<CallStream["setCredentials"]>): void {
    this.call.setCredentials(...args);
  }

  getAuthContext(): ReturnType<CallStream["getAuthContext"]> {
    return this.call.getAuthContext();
  }
}
