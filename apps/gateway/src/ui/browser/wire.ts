/**
 * The JSON the page reads from the gateway (/ui/api/...): written by the server's ui/api.ts,
 * ui/events.ts and ui/trace-view.ts, declared here in the page's own project so that the page
 * needs nothing of the server's code, and the server imports these types from here.
 */
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { ManagedAgentsEventJson } from "@metaharness/events";

/**
 * An event as the session page reads it: the API's event object, plus the trace it was written
 * in and the text of agent.thinking (ui/events.ts).
 */
export type UiEventJson = ManagedAgentsEventJson & {
  /** 32 lowercase hex digits, when the writer was traced. */
  trace_id?: string;
  /** The writer's span (16 hex digits), when traced. */
  span_id?: string;
  /** agent.thinking only. */
  thinking?: string;
};

export interface UiEventSlice {
  readonly data: UiEventJson[];
  /** More events lie beyond the slice in the direction read. */
  readonly has_more: boolean;
  /** The session's last seq when the slice was read. */
  readonly last_seq: number;
}

export interface SessionActivity {
  readonly session_id: string;
  readonly status: BetaManagedAgentsSession["status"];
  readonly last_seq: number;
  /** When the session's last event was appended (its creation, before any). */
  readonly last_activity_at: string | null;
}

/** A trace as the trace page draws it (ui/trace-view.ts). */
export type AttributeValue = string | number | boolean;

export interface TraceEventView {
  readonly name: string;
  /** Microseconds from the trace's start. */
  readonly at_us: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
}

export interface TraceSpanView {
  readonly span_id: string;
  /** The span it is a child of, as referenced; that span may be missing from the trace (depth 0 then). */
  readonly parent_span_id: string | null;
  readonly depth: number;
  readonly service: string;
  readonly operation: string;
  /** server, client, internal, producer or consumer; null when not recorded. */
  readonly kind: string | null;
  /** Microseconds from the trace's start. */
  readonly start_us: number;
  readonly duration_us: number;
  readonly status: "unset" | "ok" | "error";
  readonly status_message: string | null;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly events: readonly TraceEventView[];
}

export interface TraceView {
  readonly trace_id: string;
  /** When the first span started. */
  readonly started_at: string;
  /** From the first span's start to the last span's end. */
  readonly duration_us: number;
  readonly services: readonly string[];
  /** The sessions its spans name (mh.session_id). */
  readonly session_ids: readonly string[];
  /** Spans in the trace; `spans` holds at most MAX_VIEW_SPANS of them. */
  readonly span_count: number;
  readonly spans: readonly TraceSpanView[];
  readonly warnings: readonly string[];
}
