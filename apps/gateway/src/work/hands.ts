/**
 * The hands of a session in a self-hosted environment are the environment's workers. A session
 * asks for them with a work item: when it gets input that starts or resumes a turn and has no
 * live item, and again when a worker stops its item while the session still needs hands (the
 * worker's run ended as new input arrived, or it gave the item up).
 */
import { SessionStatus, type Event } from "@metaharness/proto";
import type { FastifyBaseLogger as Logger } from "fastify";
import type { SessionLogRpc } from "../clients.js";
import type { Metadata } from "../http/metadata.js";
import type { WorkQueue } from "./queue.js";
import type { WorkSignals } from "./signals.js";

/** Input that starts or resumes a turn (an interrupt ends one; a tool result comes from the hands). */
const WANTS_HANDS: ReadonlySet<string> = new Set(["user.message", "user.custom_tool_result", "user.tool_confirmation"]);
const STATUS_EVENTS: ReadonlySet<string> = new Set(["session.status_idle", "session.status_running", "session.status_terminated"]);

/** What asking for hands uses: the log (to read whether they are still needed), the queue and its signals, the clock. */
export interface HandsDeps {
  readonly log: SessionLogRpc;
  readonly work: WorkQueue;
  readonly workSignals: WorkSignals;
  now(): Date;
}

/** The part of a session's record (sessions/store.ts) that decides where its hands come from. */
export interface HandsSession {
  readonly id: string;
  readonly environmentId: string;
  readonly environmentType: "cloud" | "self_hosted";
  readonly metadata: Metadata;
}

export async function requestHands(
  ctx: Omit<HandsDeps, "log">,
  tenant: string,
  session: HandsSession,
  reason: "input" | "still needed",
  logger: Logger,
): Promise<void> {
  if (session.environmentType !== "self_hosted") return;
  const queued = await ctx.work.enqueue(
    { tenant, environmentId: session.environmentId, sessionId: session.id, metadata: session.metadata },
    ctx.now(),
  );
  if (!queued) return;
  ctx.workSignals.announce(session.environmentId);
  logger.info({ session_id: session.id, environment_id: session.environmentId, reason }, "work queued for the session's environment");
}

export function wantsHands(events: readonly Event[]): boolean {
  return events.some((e) => WANTS_HANDS.has(e.type));
}

/** Whether the log says the session still needs hands: running, or with input after its last status. */
export async function needsHands(ctx: Pick<HandsDeps, "log">, sessionId: string): Promise<boolean> {
  const { session } = await ctx.log.getSession({ sessionId });
  if (session === undefined || session.status === SessionStatus.SESSION_STATUS_TERMINATED) return false;
  if (session.status === SessionStatus.SESSION_STATUS_RUNNING) return true;
  // The newest status or input event, however far back (a type-filtered read by index).
  const { events } = await ctx.log.getEvents({
    sessionId,
    position: { $case: "beforeSeq", value: session.lastSeq + 1 },
    limit: 1,
    types: [...STATUS_EVENTS, ...WANTS_HANDS],
  });
  return WANTS_HANDS.has(events[0]?.type ?? "");
}
