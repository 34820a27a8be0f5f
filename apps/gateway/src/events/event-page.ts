/**
 * One page of a session's events from the log's positional slices. The cursor is a seq: the last
 * event examined. Type filters run in the log; time filters (`created_at[...]`) have no index
 * there, so they are applied to the slices read, with a bounded scan per page: a page may come
 * back short, with a cursor to go on from.
 */
import type { Event } from "@metaharness/proto";
import type { SessionLogRpc } from "../clients.js";

const SLICE = 1000;
/** Slices one page may read while a time filter skips events. */
const MAX_SLICES = 10;

export interface TimeBounds {
  readonly gt?: Date | undefined;
  readonly gte?: Date | undefined;
  readonly lt?: Date | undefined;
  readonly lte?: Date | undefined;
}

export interface EventPageQuery {
  readonly sessionId: string;
  readonly order: "asc" | "desc";
  readonly limit: number;
  /** The cursor: continue after (asc) or before (desc) this seq. */
  readonly after: number | undefined;
  readonly types: readonly string[];
  readonly time: TimeBounds;
}

type Fit = "in" | "before" | "after";

function fit(event: Event, t: TimeBounds): Fit {
  const at = event.createdAt?.getTime() ?? 0;
  if ((t.gt !== undefined && at <= t.gt.getTime()) || (t.gte !== undefined && at < t.gte.getTime())) return "before";
  if ((t.lt !== undefined && at >= t.lt.getTime()) || (t.lte !== undefined && at > t.lte.getTime())) return "after";
  return "in";
}

export async function readEventPage(log: SessionLogRpc, q: EventPageQuery): Promise<{ events: Event[]; next: number | undefined }> {
  const asc = q.order === "asc";
  const out: Event[] = [];
  const timed = Object.values(q.time).some((t) => t !== undefined);
  let position = q.after ?? (asc ? 0 : Number.MAX_SAFE_INTEGER);
  for (let i = 0; i < MAX_SLICES; i++) {
    const slice = await log.getEvents({
      sessionId: q.sessionId,
      position: asc ? { $case: "afterSeq", value: position } : { $case: "beforeSeq", value: position },
      limit: timed ? SLICE : Math.min(SLICE, q.limit - out.length),
      types: [...q.types],
    });
    const events = asc ? slice.events : [...slice.events].reverse();
    for (const event of events) {
      position = event.seq;
      const where = fit(event, q.time);
      // Past the far end of the time window in the reading direction: nothing further fits.
      if ((asc && where === "after") || (!asc && where === "before")) return { events: out, next: undefined };
      if (where === "in") out.push(event);
      if (out.length === q.limit) return { events: out, next: slice.hasMore || event !== events[events.length - 1] ? position : undefined };
    }
    if (!slice.hasMore) return { events: out, next: undefined };
  }
  return { events: out, next: position };
}
