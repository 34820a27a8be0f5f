/**
 * A work item as the gateway stores it, and as the API shows it (the SDK's BetaSelfHostedWork).
 * The `secret` is shown once, in the poll that delivers the item: base64url JSON of the SDK's
 * BetaWorkSecret, whose `sessions_token` the EnvironmentWorker uses for every call about the item
 * and its session. `api_base_url` is left out: the worker keeps the base URL it polled with.
 */
import type { BetaSelfHostedWork } from "@anthropic-ai/sdk/resources/beta/environments/work";
import type { Metadata } from "../http/metadata.js";

export type WorkState = BetaSelfHostedWork["state"];

/** The states in which an item is its session's hands (at most one per session). */
export const LIVE_STATES: readonly WorkState[] = ["queued", "starting", "active"];

export interface WorkRecord {
  readonly id: string;
  readonly tenant: string;
  readonly environmentId: string;
  readonly sessionId: string;
  readonly state: WorkState;
  readonly metadata: Metadata;
  readonly createdAt: Date;
  readonly acknowledgedAt: Date | null;
  readonly startedAt: Date | null;
  readonly latestHeartbeatAt: Date | null;
  readonly stopRequestedAt: Date | null;
  readonly stoppedAt: Date | null;
  readonly delivery: number;
  readonly deliveredAt: Date | null;
  readonly workerId: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly leaseTtlSeconds: number | null;
}

export interface WorkRow {
  work_id: string;
  tenant: string;
  environment_id: string;
  session_id: string;
  state: WorkState;
  metadata: Metadata;
  created_at: Date;
  acknowledged_at: Date | null;
  started_at: Date | null;
  latest_heartbeat_at: Date | null;
  stop_requested_at: Date | null;
  stopped_at: Date | null;
  delivery: number;
  delivered_at: Date | null;
  worker_id: string | null;
  lease_expires_at: Date | null;
  lease_ttl_seconds: number | null;
}

export const WORK_COLUMNS = `work_id, tenant, environment_id, session_id, state, metadata, created_at, acknowledged_at, started_at,
  latest_heartbeat_at, stop_requested_at, stopped_at, delivery, delivered_at, worker_id, lease_expires_at, lease_ttl_seconds`;

export function workRecord(r: WorkRow): WorkRecord {
  return {
    id: r.work_id,
    tenant: r.tenant,
    environmentId: r.environment_id,
    sessionId: r.session_id,
    state: r.state,
    metadata: r.metadata,
    createdAt: r.created_at,
    acknowledgedAt: r.acknowledged_at,
    startedAt: r.started_at,
    latestHeartbeatAt: r.latest_heartbeat_at,
    stopRequestedAt: r.stop_requested_at,
    stoppedAt: r.stopped_at,
    delivery: Number(r.delivery),
    deliveredAt: r.delivered_at,
    workerId: r.worker_id,
    leaseExpiresAt: r.lease_expires_at,
    leaseTtlSeconds: r.lease_ttl_seconds === null ? null : Number(r.lease_ttl_seconds),
  };
}

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

export function renderWork(w: WorkRecord, secret: string | null = null): BetaSelfHostedWork {
  return {
    id: w.id,
    type: "work",
    environment_id: w.environmentId,
    data: { type: "session", id: w.sessionId },
    state: w.state,
    metadata: w.metadata,
    created_at: w.createdAt.toISOString(),
    acknowledged_at: iso(w.acknowledgedAt),
    started_at: iso(w.startedAt),
    latest_heartbeat_at: iso(w.latestHeartbeatAt),
    stop_requested_at: iso(w.stopRequestedAt),
    stopped_at: iso(w.stoppedAt),
    secret,
  };
}

/** The poll's `secret`: what the SDK's sessionsTokenFromSecret decodes. */
export function workSecret(sessionsToken: string): string {
  return Buffer.from(JSON.stringify({ sessions_token: sessionsToken })).toString("base64url");
}
