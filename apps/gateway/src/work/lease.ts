/**
 * A work item's lease: the worker that acknowledged it keeps it with heartbeats, each naming the
 * last heartbeat it was told of (`expected_last_heartbeat`, NO_HEARTBEAT for the first), so a
 * worker whose lease lapsed and was handed to another is told at its next beat (412, with the
 * lease as the gateway holds it) and lets go, as the SDK's EnvironmentWorker does. A sessions
 * token of an earlier delivery is told the same. Stop ends an item: at once (force, or not yet
 * running), or by asking its worker to wind down (`stopping`, which its heartbeat reports).
 */
import type { BetaSelfHostedWorkHeartbeatResponse, BetaWorkLeaseState } from "@anthropic-ai/sdk/resources/beta/environments/work";
import type { Db } from "@metaharness/db";
import { ApiError } from "../errors/api-error.js";
import { lockWork } from "./queue.js";
import type { WorkRecord } from "./record.js";

export const NO_HEARTBEAT = "NO_HEARTBEAT";
/** desired_ttl_seconds is clamped to this. */
export const MAX_LEASE_TTL_SECONDS = 600;

export interface HeartbeatRequest {
  readonly environmentId: string;
  readonly workId: string;
  /** The delivery of the sessions token that beats; undefined for the environment key. */
  readonly delivery: number | undefined;
  readonly expected: string | undefined;
  readonly ttlSeconds: number;
}

function leaseState(work: WorkRecord, defaultTtl: number): BetaWorkLeaseState {
  return {
    last_heartbeat: work.latestHeartbeatAt?.toISOString() ?? null,
    lease_extended: false,
    state: work.state,
    ttl_seconds: work.leaseTtlSeconds ?? defaultTtl,
  };
}

function leaseLost(work: WorkRecord, defaultTtl: number, why: string): ApiError {
  return new ApiError("heartbeat_precondition_failed", `work item ${work.id}: ${why}; another worker may hold the lease`, {
    details: { current_state: leaseState(work, defaultTtl) },
  });
}

export async function heartbeat(db: Db, req: HeartbeatRequest, now: Date): Promise<BetaSelfHostedWorkHeartbeatResponse> {
  return db.transaction(async (tx) => {
    const work = await lockWork(tx, req.environmentId, req.workId);
    const answer = (w: WorkRecord, extended: boolean): BetaSelfHostedWorkHeartbeatResponse => ({
      type: "work_heartbeat",
      last_heartbeat: w.latestHeartbeatAt?.toISOString() ?? "",
      lease_extended: extended,
      state: w.state,
      ttl_seconds: w.leaseTtlSeconds ?? req.ttlSeconds,
    });
    if (req.delivery !== undefined && req.delivery !== work.delivery) throw leaseLost(work, req.ttlSeconds, "the lease was handed out again since this token's delivery");
    if (work.state === "stopped") return answer(work, false);
    if (work.state === "queued") {
      if (req.expected !== undefined && req.expected !== NO_HEARTBEAT) throw leaseLost(work, req.ttlSeconds, "the lease lapsed and the item is queued again");
      throw new ApiError("conflict", `work item ${work.id} is queued: acknowledge it before heartbeating it`);
    }
    // The stored heartbeat is compared only while the item runs (not once it is stopping).
    if (work.state !== "stopping" && req.expected !== undefined) {
      const stored = work.latestHeartbeatAt?.toISOString() ?? NO_HEARTBEAT;
      if (req.expected !== stored) throw leaseLost(work, req.ttlSeconds, `expected_last_heartbeat ${req.expected} is not the stored ${stored}`);
    }
    // Strictly later than the last one, so an echoed value names exactly one beat.
    const previous = work.latestHeartbeatAt?.getTime() ?? 0;
    const beat = new Date(Math.max(now.getTime(), previous + 1));
    const state = work.state === "stopping" ? "stopping" : "active";
    const leaseExpiresAt = new Date(beat.getTime() + req.ttlSeconds * 1000);
    await tx.query(
      `UPDATE gw_work SET state = $2, latest_heartbeat_at = $3, started_at = COALESCE(started_at, $3), lease_expires_at = $4, lease_ttl_seconds = $5
        WHERE work_id = $1`,
      [work.id, state, beat, leaseExpiresAt, req.ttlSeconds],
    );
    return answer({ ...work, state, latestHeartbeatAt: beat, leaseTtlSeconds: req.ttlSeconds }, true);
  });
}

export interface StopRequest {
  readonly environmentId: string;
  readonly workId: string;
  /** The delivery of the sessions token that stops; undefined for a key. */
  readonly delivery: number | undefined;
  readonly force: boolean;
}

export interface Stopped {
  readonly work: WorkRecord;
  /** The item was `stopping` before this stop: its wind-down had been asked for already. */
  readonly wasStopping: boolean;
}

export async function stop(db: Db, req: StopRequest, now: Date): Promise<Stopped> {
  return db.transaction(async (tx) => {
    const work = await lockWork(tx, req.environmentId, req.workId);
    if (req.delivery !== undefined && req.delivery !== work.delivery) {
      throw new ApiError("conflict", `work item ${work.id} was handed to another worker since this token's delivery`);
    }
    if (work.state === "stopped") throw new ApiError("conflict", `work item ${work.id} is already stopped`);
    const stopRequestedAt = work.stopRequestedAt ?? now;
    if (req.force || work.state === "queued" || work.state === "starting") {
      await tx.query("UPDATE gw_work SET state = 'stopped', stop_requested_at = $2, stopped_at = $3, lease_expires_at = NULL WHERE work_id = $1", [
        work.id,
        stopRequestedAt,
        now,
      ]);
      return { work: { ...work, state: "stopped", stopRequestedAt, stoppedAt: now, leaseExpiresAt: null }, wasStopping: work.state === "stopping" };
    }
    await tx.query("UPDATE gw_work SET state = 'stopping', stop_requested_at = $2 WHERE work_id = $1", [work.id, stopRequestedAt]);
    return { work: { ...work, state: "stopping", stopRequestedAt }, wasStopping: work.state === "stopping" };
  });
}
