/**
 * One event stream: the session log's WatchEvents from a seq (its backlog, then live events,
 * with no gap and no duplicate at the join) relayed as SSE, with token previews when asked for
 * and a heartbeat. It ends when the session is terminated and everything was sent, when the
 * client goes, on shutdown, or when `revoked` (asked at each heartbeat) names why the client may
 * no longer read the session (sent as an `error` event); a failure after the stream opened is sent as an `error` event,
 * which the SDK raises as an APIError.
 */
import { toSdkEventJson, type SdkJsonOptions } from "@metaharness/events";
import type { FastifyBaseLogger as Logger } from "fastify";
import { ApiError } from "../errors/api-error.js";
import type { WatchEventsResponse } from "@metaharness/proto";
import type { SessionLogRpc } from "../clients.js";
import type { Previews } from "./previews.js";
import type { SseWriter } from "./sse.js";

export interface PumpOptions {
  /**
   * Opens the SSE response (its headers). Called once the log watches: for a stream from now,
   * when its from_head watch said where it started, so that anything the client sends once it
   * sees the headers comes after that (the SDK opens the stream, then sends). A failure before
   * it is thrown, for the route to answer as an HTTP error.
   */
  readonly open: () => void;
  readonly log: SessionLogRpc;
  readonly sessionId: string;
  /** Where to resume; undefined: live from the session's last event when the watch begins (the log finds it). */
  readonly afterSeq: number | undefined;
  readonly previews: Previews;
  /** The SDK's shapes, or with our additions (http/extensions.ts). */
  readonly render: SdkJsonOptions;
  readonly writer: SseWriter;
  /**
   * Aborted by the caller when the stream must end (the client went, shutdown); the pump aborts it
   * itself as it ends, which cancels its watch. One controller for both, where a second one of
   * the pump's own, aborted by a listener on the caller's, cost every stream a signal, a listener
   * and an abort dispatched twice (issue 31).
   */
  readonly ends: AbortController;
  readonly heartbeatMs: number;
  /** Asked at each heartbeat: an error when the credential no longer reaches the session. */
  readonly revoked?: () => Promise<ApiError | undefined>;
  readonly requestId: string;
  readonly logger: Logger;
}

/** Why a stream's watch is cancelled when the pump ends: made once, where abort() without a reason makes a DOMException (and its stack) per stream. */
const PUMP_ENDED = new Error("the event stream ended");

export async function pump(o: PumpOptions): Promise<void> {
  const ended = o.ends;
  const signal = ended.signal;
  let checking = false;
  const beat = async (): Promise<void> => {
    await o.writer.ping();
    if (o.revoked === undefined || checking || signal.aborted) return;
    checking = true;
    try {
      const why = await o.revoked();
      if (why !== undefined && !signal.aborted) {
        o.logger.info({ session_id: o.sessionId, reason: why.message }, "event stream revoked");
        await o.writer.send("error", why.body(o.requestId));
        ended.abort(PUMP_ENDED);
      }
    } catch (err) {
      // Asked again at the next heartbeat.
      o.logger.warn({ err, session_id: o.sessionId }, "could not check the event stream's credential");
    } finally {
      checking = false;
    }
  };
  // From the head: after_seq past any head too, so that a log of the release before (which
  // knows no from_head) answers OUT_OF_RANGE rather than the whole backlog.
  const watch = o.log.watchEvents(
    { sessionId: o.sessionId, afterSeq: o.afterSeq ?? Number.MAX_SAFE_INTEGER, types: [], includeDeltas: o.previews.enabled, batchDeltas: true, fromHead: o.afterSeq === undefined },
    { signal },
  )[Symbol.asyncIterator]();
  let next: IteratorResult<WatchEventsResponse> | undefined;
  if (o.afterSeq === undefined) {
    try {
      // Its first message (`started_after`): the watch hears every append from there on.
      next = await watch.next();
    } catch (err) {
      // The client went meanwhile: opened and ended at once below. Else the route answers it.
      if (!signal.aborted) throw err;
      next = { done: true, value: undefined };
    }
  }
  o.open();
  const heartbeat = setInterval(() => void beat(), o.heartbeatMs);
  heartbeat.unref();
  let sent = 0;
  let lastSeq = o.afterSeq;
  try {
    for (next ??= await watch.next(); next.done !== true; next = await watch.next()) {
      const item = next.value;
      if (item.event !== undefined) {
        o.previews.settle(item.event);
        const json = toSdkEventJson(item.event, o.render);
        if (json !== undefined) {
          const full = o.writer.send(item.event.type, json, item.event.seq);
          if (full !== undefined) await full;
          sent += 1;
        }
        lastSeq = item.event.seq;
      } else {
        // Asked for in batches (a PublishDeltas' deltas in one message); `delta` alone from a log of the release before.
        for (const delta of item.delta === undefined ? item.deltas : [item.delta]) {
          for (const frame of o.previews.frames(delta)) {
            const full = o.writer.send(frame.type, frame);
            if (full !== undefined) await full;
          }
        }
      }
      if (o.writer.closed) break;
    }
  } catch (err) {
    if (!signal.aborted && !o.writer.closed) {
      const error = ApiError.from(err);
      o.logger.warn({ err, session_id: o.sessionId, seq: lastSeq }, "event stream failed");
      await o.writer.send("error", error.body(o.requestId));
    }
  } finally {
    clearInterval(heartbeat);
    // Left early (the client went): the watch is cancelled.
    ended.abort(PUMP_ENDED);
    o.writer.end();
    o.logger.info({ session_id: o.sessionId, after_seq: o.afterSeq, last_seq: lastSeq, events: sent }, "event stream closed");
  }
}
