/**
 * User input into a session: appended to the log in the order sent, in one atomic EmitEvents,
 * then the harness is woken. The harness also sweeps for sessions with unanswered input, so a
 * failed Wake is logged and the request still succeeds. `user.interrupt` needs nothing special:
 * the harness driving the session follows the log and acts on it as soon as it is appended.
 * system.message alone wakes nothing: it starts no turn, and waits in the log for the next one.
 */
import type { Event } from "@metaharness/proto";
import type { FastifyBaseLogger as Logger } from "fastify";
import type { HarnessRpc, SessionLogRpc } from "../clients.js";

/** What appending input and waking the harness use. */
export interface AppendDeps {
  readonly log: SessionLogRpc;
  readonly harness: HarnessRpc;
  readonly wakeTimeoutMs: number;
}

export async function wake(ctx: Pick<AppendDeps, "harness" | "wakeTimeoutMs">, sessionId: string, logger: Logger): Promise<void> {
  try {
    await ctx.harness.wake({ sessionId }, { deadlineMs: ctx.wakeTimeoutMs });
  } catch (err) {
    logger.warn({ err, session_id: sessionId }, "harness wake failed; its sweeper will pick the session up");
  }
}

export async function appendUserEvents(ctx: AppendDeps, sessionId: string, events: Event[], logger: Logger): Promise<Event[]> {
  if (events.length === 0) return [];
  const { events: stored } = await ctx.log.emitEvents({ sessionId, events });
  if (events.some((e) => e.type !== "system.message")) await wake(ctx, sessionId, logger);
  return stored;
}
