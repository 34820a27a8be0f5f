/**
 * The two ways the turn-cpu benchmark reaches its services (turn-cpu-driver.ts drives the load):
 * - grpc: as a gateway and a UI would, the bench playing the gateway: a session is created and
 *   watched (WatchEvents with deltas, batched as the gateway asks for them) for its whole life,
 *   and each of its turns appends a user.message and wakes the harness (Wake RPC);
 * - sdk: as an SDK user does, through the gateway as a process of its own: sessions.create, the
 *   session's event stream opened with token previews, and per turn events.send of a
 *   user.message (the gateway appends it and sends the Wake).
 * Either way a session's watch counts its idles and times each turn's first token.
 */
import { performance } from "node:perf_hooks";
import type Anthropic from "@anthropic-ai/sdk";
import { userMessage } from "../support/events.js";
import type { TurnStack } from "./turn-cpu-stack.js";

/** One session's watch, whichever way in: its idles counted, a turn's first token timed. */
export interface TurnWatch {
  /** performance.now() of the turn's first token (the clock the offline model stamps with too); reset to undefined before each turn. */
  firstDelta: number | undefined;
  /** Resolves once the session has gone idle `n` times. */
  idle(n: number): Promise<void>;
  close(): Promise<void>;
}

/** Idles counted and waited for, and how the reading ended, for both watches. */
class IdleCount {
  idles = 0;
  failure: Error | undefined;
  private readonly waiters = new Set<() => void>();

  notify(): void {
    for (const w of this.waiters) w();
  }

  idle(n: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.idles >= n) {
          this.waiters.delete(check);
          resolve();
        } else if (this.failure !== undefined) {
          this.waiters.delete(check);
          reject(this.failure);
        }
      };
      this.waiters.add(check);
      check();
    });
  }
}

/** A session watched over gRPC (WatchEvents with deltas): the first delta of each model request timed. */
class Watch implements TurnWatch {
  /** performance.now() of the first delta of a request not seen before. */
  firstDelta: number | undefined;
  private readonly requests = new Set<string>();
  private readonly count = new IdleCount();
  private readonly controller = new AbortController();
  readonly done: Promise<void>;

  constructor(stack: TurnStack, readonly sessionId: string) {
    // The deltas published together in one message, as the gateway asks for them.
    const stream = stack.logClient.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: true, fromHead: false }, { signal: this.controller.signal });
    this.done = (async () => {
      try {
        for await (const msg of stream) {
          const delta = msg.deltas[0] ?? msg.delta;
          if (delta !== undefined && !this.requests.has(delta.modelRequestId)) {
            this.requests.add(delta.modelRequestId);
            this.firstDelta ??= performance.now();
          }
          if (msg.event?.type === "session.status_idle") this.count.idles++;
          this.count.notify();
        }
        this.count.failure = new Error(`the watch of ${sessionId} ended`);
      } catch (err) {
        this.count.failure = this.controller.signal.aborted ? new Error("closed") : new Error(`the watch of ${sessionId} failed: ${String(err)}`);
      }
      this.count.notify();
    })();
  }

  idle(n: number): Promise<void> {
    return this.count.idle(n);
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

/** A session's SDK event stream (token previews asked for): its first preview frame of a turn timed. */
class SdkWatch implements TurnWatch {
  firstDelta: number | undefined;
  private readonly count = new IdleCount();
  private closing = false;
  readonly done: Promise<void>;

  constructor(
    private readonly stream: Awaited<ReturnType<Anthropic["beta"]["sessions"]["events"]["stream"]>>,
    readonly sessionId: string,
  ) {
    this.done = (async () => {
      try {
        for await (const e of stream) {
          const type = e.type as string;
          if (type === "event_start" || type === "event_delta") this.firstDelta ??= performance.now();
          if (type === "session.status_idle") this.count.idles++;
          if (type === "session.error") throw new Error(`session.error on ${sessionId}: ${JSON.stringify(e)}`);
          this.count.notify();
        }
        this.count.failure = new Error(`the stream of ${sessionId} ended`);
      } catch (err) {
        this.count.failure = this.closing ? new Error("closed") : new Error(`the stream of ${sessionId} failed: ${String(err)}`);
      }
      this.count.notify();
    })();
  }

  idle(n: number): Promise<void> {
    return this.count.idle(n);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.stream.controller.abort();
    await this.done;
  }
}

/** The way turns go in: straight to the log and the harness over gRPC, or through the gateway with the SDK. */
export type Via = "grpc" | "sdk";

/** A session opened and watched, and its turns' input sent, by one way in. */
export interface SessionClient {
  open(): Promise<{ sessionId: string; watch: TurnWatch }>;
  /** Sends a turn's user.message and wakes the harness: performance.now() once appended and once woken (the same with the SDK: both are in events.send). */
  send(sessionId: string, text: string): Promise<{ emitted: number; woken: number }>;
}

function grpcClient(stack: TurnStack): SessionClient {
  return {
    async open() {
      const { session } = await stack.logClient.createSession({ sessionId: "", metadata: undefined });
      const sessionId = session!.sessionId;
      return { sessionId, watch: new Watch(stack, sessionId) };
    },
    async send(sessionId, text) {
      await stack.logClient.emitEvent({ sessionId, event: userMessage(text) });
      const emitted = performance.now();
      await stack.harnessClient.wake({ sessionId });
      return { emitted, woken: performance.now() };
    },
  };
}

function sdkClient(gateway: NonNullable<TurnStack["gateway"]>): SessionClient {
  const sdk = gateway.sdk();
  return {
    async open() {
      const sessionId = (await sdk.beta.sessions.create({ agent: gateway.agentId, environment_id: gateway.environmentId })).id;
      const stream = await sdk.beta.sessions.events.stream(sessionId, { event_deltas: ["agent.message"] });
      return { sessionId, watch: new SdkWatch(stream, sessionId) };
    },
    async send(sessionId, text) {
      await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
      const sent = performance.now();
      return { emitted: sent, woken: sent };
    },
  };
}

export function sessionClient(stack: TurnStack): SessionClient {
  return stack.gateway === undefined ? grpcClient(stack) : sdkClient(stack.gateway);
}
