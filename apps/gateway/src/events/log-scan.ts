/**
 * Reading a whole session's log (or the events of some types, by the log's index) slice by
 * slice, for the questions that need every event rather than a page: which tool uses still wait
 * for an answer (answers.ts), and which seq a served event id names (a stream resumed with
 * `Last-Event-ID: sevt_...`, whose id may be a digest that only a scan can match).
 */
import { publicEventId } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import type { SessionLogRpc } from "../clients.js";

const SLICE = 1000;

/** Every event of `types` (all types when empty), in seq order. */
export async function readWholeLog(log: SessionLogRpc, sessionId: string, types: readonly string[] = []): Promise<Event[]> {
  const out: Event[] = [];
  let after = 0;
  for (;;) {
    const slice = await log.getEvents({ sessionId, position: { $case: "afterSeq", value: after }, limit: SLICE, types: [...types] });
    out.push(...slice.events);
    const last = slice.events.at(-1);
    if (!slice.hasMore || last === undefined) return out;
    after = last.seq;
  }
}

/** The seq of the event served as `id` (its public id, or the log's own), or undefined. */
export async function seqOfServedId(log: SessionLogRpc, sessionId: string, id: string): Promise<number | undefined> {
  let after = 0;
  for (;;) {
    const slice = await log.getEvents({ sessionId, position: { $case: "afterSeq", value: after }, limit: SLICE, types: [] });
    for (const event of slice.events) {
      if (event.id === id || publicEventId(sessionId, event.id) === id) return event.seq;
    }
    const last = slice.events.at(-1);
    if (!slice.hasMore || last === undefined) return undefined;
    after = last.seq;
  }
}
