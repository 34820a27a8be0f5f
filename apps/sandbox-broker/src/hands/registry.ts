/**
 * External hands connected over ConnectHand: each is a stream the broker writes execute requests
 * to and reads results from. A call waits for its result up to its timeout; a hand that hangs up
 * fails every call it holds at once ("... was lost: hand <id> disconnected"), never leaves one
 * hanging.
 */
import { MhError } from "@metaharness/errors";
import type { ConnectHandResponse, HandRegistration, HandResult, HandTool, ListHandToolsResponse } from "@metaharness/proto";
import { SandboxGoneError } from "../protocol/agent-channel.js";
import type { Input } from "../tools/types.js";
import { toolSpecsOf } from "./tool-specs.js";

interface PendingCall {
  readonly sandboxId: string;
  resolve(result: HandResult | "timeout"): void;
  reject(err: Error): void;
  readonly timer: NodeJS.Timeout;
}

export class ConnectedHand {
  readonly kind: string;
  readonly handId: string;
  readonly tools: ReadonlySet<string>;
  readonly toolSpecs: readonly HandTool[];
  readonly closed: Promise<string>;
  /** Sandboxes bound to this hand (for spreading new ones across hands of a kind). */
  bound = 0;
  private readonly pending = new Map<string, PendingCall>();
  private closedReason: string | undefined;
  private resolveClosed!: (reason: string) => void;

  constructor(
    registration: HandRegistration,
    private readonly send: (message: ConnectHandResponse) => void,
    private readonly hangUp: () => void,
  ) {
    this.kind = registration.kind;
    this.handId = registration.handId;
    this.toolSpecs = toolSpecsOf(registration);
    this.tools = new Set(this.toolSpecs.map((t) => t.name));
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  get isClosed(): boolean {
    return this.closedReason !== undefined;
  }

  /** Sends one execute request; resolves with the hand's result, or "timeout". */
  call(sandboxId: string, callId: string, name: string, input: Input, timeoutMs: number): Promise<HandResult | "timeout"> {
    if (this.closedReason !== undefined) return Promise.reject(this.gone(sandboxId));
    if (this.pending.has(callId)) {
      return Promise.reject(new MhError("ALREADY_EXISTS", `call ${callId} is already running on hand ${this.handId}`));
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(callId);
        resolve("timeout");
      }, timeoutMs);
      this.pending.set(callId, { sandboxId, resolve, reject, timer });
      this.send({ callId, name, input: { ...input }, sandboxId });
    });
  }

  /** A result from the hand; one for a call nobody waits for (late, unknown) is dropped. */
  deliver(result: HandResult): boolean {
    const p = this.pending.get(result.callId);
    if (p === undefined) return false;
    this.pending.delete(result.callId);
    clearTimeout(p.timer);
    p.resolve(result);
    return true;
  }

  /** The hand is gone: fail what it holds. `hangUp` also ends the stream (broker shutdown). */
  close(reason: string, hangUp = false): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.gone(p.sandboxId));
    }
    this.pending.clear();
    this.resolveClosed(reason);
    if (hangUp) this.hangUp();
  }

  private gone(sandboxId: string): SandboxGoneError {
    return new SandboxGoneError(`sandbox ${sandboxId} was lost: ${this.closedReason ?? "its hand disconnected"}`);
  }
}

export class HandRegistry {
  private readonly hands = new Map<string, ConnectedHand>();

  add(hand: ConnectedHand): void {
    if (this.hands.has(hand.handId)) {
      throw new MhError("ALREADY_EXISTS", `a hand with id ${hand.handId} is already connected`, { field: "register.hand_id" });
    }
    this.hands.set(hand.handId, hand);
  }

  remove(hand: ConnectedHand): void {
    if (this.hands.get(hand.handId) === hand) this.hands.delete(hand.handId);
  }

  /** The connected hand of `kind` with the fewest sandboxes, if any. */
  pick(kind: string): ConnectedHand | undefined {
    let best: ConnectedHand | undefined;
    for (const h of this.hands.values()) {
      if (h.kind === kind && !h.isClosed && (best === undefined || h.bound < best.bound)) best = h;
    }
    return best;
  }

  /**
   * The tools the connected hands of `kind` offer: the union by name, the hand connected last
   * winning where two describe one differently; undefined when none is connected.
   */
  toolsOf(kind: string): ListHandToolsResponse | undefined {
    const hands = [...this.hands.values()].filter((h) => h.kind === kind && !h.isClosed);
    if (hands.length === 0) return undefined;
    const byName = new Map<string, HandTool>();
    for (const h of hands) for (const t of h.toolSpecs) byName.set(t.name, t);
    const tools = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { tools, handIds: hands.map((h) => h.handId) };
  }

  kinds(): string[] {
    return [...new Set([...this.hands.values()].map((h) => h.kind))];
  }

  /** Ends every hand's stream (shutdown). */
  closeAll(reason: string): void {
    for (const h of this.hands.values()) h.close(reason, true);
    this.hands.clear();
  }
}
