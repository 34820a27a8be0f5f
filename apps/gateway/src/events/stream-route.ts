/**
 * GET /v1/sessions/{id}/events/stream: the SDK's `sessions.events.stream()`. Like Anthropic's
 * stream it starts live, from the session's current end. Beyond it, a client that lost its
 * connection resumes where it left off: `Last-Event-ID` with the seq (the SSE `id:`, what
 * EventSource sends by itself) or the `id` of the last event it read (what the SDK yields), or
 * `?after_seq=<seq>`, replays the events after it and then goes live, with no gap and no
 * duplicate. `event_deltas[]` opts into token previews; events are in the SDK's shapes unless
 * the client asks for our additions (http/extensions.ts).
 */
import type { BetaManagedAgentsDeltaType } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { isValidEventId } from "@metaharness/events";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../auth/principals.js";
import { revokedToken } from "../http/authenticate.js";
import { type ApiError, invalidRequest } from "../errors/api-error.js";
import { renderOptions } from "../http/extensions.js";
import { headerValue } from "../http/headers.js";
import { streamEventsQuery } from "./schemas.js";
import { sessionParams } from "../sessions/schemas.js";
import { logSession } from "../sessions/live.js";
import { seqOfServedId } from "./log-scan.js";
import { Previews } from "./previews.js";
import { pump } from "./pump.js";
import { quietAbort } from "./quiet-abort.js";
import { SseWriter } from "./sse.js";
import type { SessionLogRpc } from "../clients.js";
import type { Router } from "../http/router.js";
import type { SessionStore } from "../sessions/store.js";
import type { WorkQueue } from "../work/queue.js";
import type { StreamRegistry } from "./stream-registry.js";

/** What serving a stream uses: the log, sessions' records, work items (a sessions token's currency), the open streams. */
export interface StreamDeps {
  readonly log: SessionLogRpc;
  readonly sessions: SessionStore;
  readonly work: WorkQueue;
  readonly streams: StreamRegistry;
  readonly heartbeatMs: number;
  now(): Date;
}

export interface StreamQuery {
  event_deltas?: BetaManagedAgentsDeltaType[];
  after_seq?: number;
  mh_extensions?: boolean;
}

interface StreamRoute {
  Params: { session_id: string };
  Querystring: StreamQuery;
}

/** `?after_seq=` wins over `Last-Event-ID` (a seq, or an event's id); neither: undefined (start live). */
async function resumeFrom(ctx: Pick<StreamDeps, "log">, req: FastifyRequest<{ Querystring: StreamQuery }>, sessionId: string): Promise<number | undefined> {
  if (req.query.after_seq !== undefined) return req.query.after_seq;
  const value = headerValue(req, "last-event-id")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d{1,15}$/.test(value)) return Number(value);
  const seq = isValidEventId(value) ? await seqOfServedId(ctx.log, sessionId, value) : undefined;
  if (seq === undefined) {
    throw invalidRequest("Last-Event-ID", `must be the seq of an event (the \`id:\` of its SSE message) or the id of one of this session's events, not ${JSON.stringify(value)}`);
  }
  return seq;
}

/**
 * A sessions token was checked when the stream opened; its item may since have passed to another
 * worker, stopped or outlived its lease: the stream ends then (asked at each heartbeat, one query).
 */
function revokedCheck(ctx: Pick<StreamDeps, "work" | "now">, p: Principal | undefined): (() => Promise<ApiError | undefined>) | undefined {
  if (p?.kind !== "work_token") return undefined;
  return async () => ((await ctx.work.tokenCurrent(p.workId, p.delivery, ctx.now())) ? undefined : revokedToken(p.workId));
}

/** Why a stream's watch ends when its client goes: made once, where abort() without a reason makes a DOMException (and its stack) per stream. */
const CLIENT_GONE = new Error("the event stream's client went away");

export function registerStreamRoute(router: Router, ctx: StreamDeps): void {
  router.add<StreamRoute>(
    {
      method: "GET",
      url: "/v1/sessions/:session_id/events/stream",
      sdk: "beta.sessions.events.stream",
      summary: "Stream a session's events as SSE, live from now, or resumed after a seq (Last-Event-ID or after_seq).",
      response: "BetaManagedAgentsStreamSessionEvents",
      errors: ["permission_denied", "not_found"],
      schema: { params: sessionParams, querystring: streamEventsQuery },
      accepts: ["api_key", "work_token"],
      stream: true,
    },
    (req, reply) => streamSession(ctx, req, reply, req.params.session_id),
  );
}

/**
 * The SSE stream of session `sessionId` (its primary thread's too, thread-routes.ts): live from
 * now, or resumed after a seq.
 */
export async function streamSession(
  ctx: StreamDeps,
  req: FastifyRequest<{ Querystring: StreamQuery }>,
  reply: FastifyReply,
  sessionId: string,
): Promise<void> {
  const record = await ctx.sessions.requireTarget(req.tenant, sessionId);
  const resume = await resumeFrom(ctx, req, record.id);
  // A stream from now needs no GetSession: the log starts the watch at the head it finds (or
  // knows), and the response opens once it said so (pump.ts). A resumed one is checked against
  // the head first, so a seq beyond it is a 400.
  if (resume !== undefined) {
    const live = await logSession(ctx, record.id);
    if (resume > live.lastSeq) {
      throw invalidRequest(req.query.after_seq === undefined ? "Last-Event-ID" : "after_seq", `${resume} is beyond the session's last event (${live.lastSeq})`);
    }
  }
  const lease = ctx.streams.acquire(req.tenant);
  // The stream ends at the client's going or the gateway's shutdown (the lease), whichever comes
  // first, or the pump's own end: one signal aborted by a listener on each, where AbortSignal.any
  // made a composite signal (weak references both ways, and an abort dispatched through two
  // signals) for every stream.
  const gone = new AbortController();
  const shutdown = (): void => gone.abort(lease.signal.reason);
  lease.signal.addEventListener("abort", shutdown, { once: true });
  // The response's close (not the request's, which fires once its body is read) means the
  // client went away.
  reply.raw.once("close", () => gone.abort(CLIENT_GONE));
  // The client's going makes Node's `aborted` error for the request: without its stack.
  const loud = quietAbort(reply.raw);
  const writer = new SseWriter(reply.raw);
  try {
    await pump({
      open: () => {
        void reply.hijack();
        writer.open(req.id);
      },
      log: ctx.log,
      sessionId: record.id,
      afterSeq: resume,
      previews: new Previews(new Set(req.query.event_deltas ?? []), record.id),
      render: renderOptions(req),
      writer,
      ends: gone,
      heartbeatMs: ctx.heartbeatMs,
      revoked: revokedCheck(ctx, req.principal),
      requestId: req.id,
      logger: req.log,
    });
  } finally {
    loud();
    lease.signal.removeEventListener("abort", shutdown);
    lease.release();
  }
}
