/**
 * GET /ui/api/traces/:trace_id: one trace from Jaeger, as the trace page draws it. Jaeger knows
 * nothing of tenants, so the trace is the key's tenant's only when every session its spans name
 * (mh.session_id: harness steps, session-scoped RPCs) is a session of that tenant, and it names at
 * least one. Anything else, like a trace Jaeger does not have, is not found: the answer never
 * tells whether another tenant's trace exists.
 *
 * Jaeger not configured, or not answering, is the deployment's state rather than a failure of the
 * request: the page says so in words, and the terminal of `mh dev` gets no stack trace. Jaeger
 * going down is one warning line (with the reason, no stack), not repeated until it answers again.
 */
import type { FastifyBaseLogger } from "fastify";
import { ApiError } from "../errors/api-error.js";
import type { SessionStore } from "../sessions/store.js";
import { obj, str } from "../http/json-schema.js";
import type { JaegerQuery } from "./jaeger.js";
import type { TraceView } from "./browser/wire.js";
import { sessionIdsOf, toTraceView } from "./trace-view.js";

/** Distinct sessions a trace may name and still be checked (ours name one). */
export const MAX_TRACE_SESSIONS = 100;

export const traceParams = obj({ trace_id: str("The trace: 32 lowercase hex digits, as in an event's traceparent.", { pattern: "^[0-9a-f]{32}$" }) }, ["trace_id"]);

/** Whether the sessions a trace names make it the caller's: at least one, and every one `owns`. */
export async function ownsTrace(sessionIds: readonly string[], owns: (sessionId: string) => Promise<boolean>): Promise<boolean> {
  if (sessionIds.length === 0 || sessionIds.length > MAX_TRACE_SESSIONS) return false;
  const owned = await Promise.all(sessionIds.map(owns));
  return owned.every(Boolean);
}

/** Whether Jaeger failed on the last call, so that its being down is logged once, not per request. */
export class JaegerHealth {
  private down = false;

  constructor(private readonly log: FastifyBaseLogger) {}

  /** Runs a call to Jaeger; a failure is logged (once while it lasts) and marked as logged for the error handler. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const value = await fn();
      if (this.down) this.log.info("Jaeger's query API answers again");
      this.down = false;
      return value;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (!this.down) {
        const cause = err.cause instanceof Error ? err.cause.message : undefined;
        this.log.warn({ reason: cause }, `${err.message} (the trace page says so; this is not logged again until Jaeger answers)`);
      }
      this.down = true;
      throw new ApiError(err.error, err.message, { logged: true });
    }
  }
}

export async function readTrace(ctx: { readonly sessions: SessionStore }, jaeger: JaegerQuery | undefined, health: JaegerHealth, tenant: string, traceId: string): Promise<TraceView> {
  if (jaeger === undefined) throw new ApiError("unavailable", "This gateway shows no traces: it was started without MH_JAEGER_QUERY_URL.", { logged: true });
  const trace = await health.call(() => jaeger.trace(traceId));
  const mine = trace !== undefined && (await ownsTrace(sessionIdsOf(trace), async (id) => (await ctx.sessions.get(tenant, id)) !== undefined));
  if (!mine) {
    throw new ApiError("not_found", `No trace ${traceId} for this API key. Jaeger keeps traces in memory, and a trace's spans reach it a second or two after the work.`);
  }
  return toTraceView(trace);
}
