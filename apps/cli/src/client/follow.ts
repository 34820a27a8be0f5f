/**
 * A session's events, followed live through the SDK's stream and resumed after a dropped
 * connection: each reconnect asks for the events after the last seq seen (`after_seq`, our
 * extension of the Managed Agents stream), so nothing is missed or repeated. Token previews
 * (event_start / event_delta) are passed through but carry no seq; a reconnect may lose some,
 * never the stored message they preview.
 */
import Anthropic from "@anthropic-ai/sdk";
import { MhError, backoffMs, retryPolicy, sleep } from "@metaharness/errors";
import type { BetaManagedAgentsStreamSessionEvents } from "@anthropic-ai/sdk/resources/beta/sessions/events";

export type StreamEvent = BetaManagedAgentsStreamSessionEvents;

/** Reconnects in a row before giving up (8), and the capped, half-jittered backoff between them. */
export const FOLLOW_RETRY = retryPolicy({ initialIntervalMs: 200, maxIntervalMs: 5_000, maxAttempts: 9 });

export interface FollowOptions {
  /** Start after this seq (0: from the beginning). */
  readonly afterSeq: number;
  /** Ask for token previews of agent messages and thinking. */
  readonly deltas?: boolean;
  readonly signal?: AbortSignal;
  /** Told about each reconnect (attempt number, the error that caused it). */
  readonly onReconnect?: (attempt: number, err: unknown) => void;
  /** Told when a stream's response has arrived, before its first event. */
  readonly onOpen?: () => void;
}

/** Our `seq` on a stored event; undefined for previews. */
export function seqOf(event: StreamEvent): number | undefined {
  const seq = (event as { seq?: unknown }).seq;
  return typeof seq === "number" ? seq : undefined;
}

/** Client errors (4xx) will not get better by reconnecting; everything else might. */
function retryable(err: unknown): boolean {
  if (err instanceof Anthropic.APIError && err.status !== undefined) return err.status >= 500 || err.status === 429 || err.status === 408;
  return true;
}

export async function* follow(client: Anthropic, sessionId: string, opts: FollowOptions): AsyncGenerator<StreamEvent> {
  let after = opts.afterSeq;
  let failures = 0;
  const aborted = (): boolean => opts.signal?.aborted === true;
  // Options' query replaces the params' query in the SDK, so event_deltas goes there too.
  const deltas = opts.deltas === true ? { event_deltas: ["agent.message", "agent.thinking"] } : {};
  for (;;) {
    try {
      const stream = await client.beta.sessions.events.stream(sessionId, {}, {
        query: { after_seq: after, ...deltas },
        maxRetries: 0,
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      });
      opts.onOpen?.();
      for await (const event of stream) {
        failures = 0;
        const seq = seqOf(event);
        if (seq !== undefined) {
          if (seq <= after) continue;
          after = seq;
        }
        yield event;
        // The server ends the stream after this one; nothing can follow it.
        if (event.type === "session.status_terminated") return;
      }
      // Otherwise the server ended it because it is shutting down: reconnect.
      if (aborted()) return;
      throw new MhError("UNAVAILABLE", "the event stream ended");
    } catch (err) {
      if (aborted()) return;
      failures += 1;
      if (!retryable(err) || failures >= FOLLOW_RETRY.maxAttempts) throw err;
      opts.onReconnect?.(failures, err);
    }
    await sleep(backoffMs(FOLLOW_RETRY, failures), opts.signal);
    if (aborted()) return;
  }
}
