/**
 * The session object of the API, from the gateway's record and the session log's live view
 * (status). Fields this gateway does not track yet have their empty value: no outcome
 * evaluations, no deployment.
 */
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { SessionStatus } from "@metaharness/proto";
import { renderStats, renderUsage } from "./usage.js";
import type { SessionRecord, UsageState } from "./store.js";

export type SessionStatusJson = BetaManagedAgentsSession["status"];

export const STATUS_JSON: Readonly<Record<SessionStatus, SessionStatusJson>> = {
  [SessionStatus.SESSION_STATUS_UNSPECIFIED]: "idle",
  [SessionStatus.SESSION_STATUS_IDLE]: "idle",
  [SessionStatus.SESSION_STATUS_RUNNING]: "running",
  [SessionStatus.SESSION_STATUS_TERMINATED]: "terminated",
  [SessionStatus.UNRECOGNIZED]: "idle",
};

export function statusJson(status: SessionStatus): SessionStatusJson {
  return STATUS_JSON[status];
}

export function renderSession(record: SessionRecord, status: SessionStatus, usage: UsageState, now: Date): BetaManagedAgentsSession {
  return {
    id: record.id,
    type: "session",
    agent: record.agent,
    environment_id: record.environmentId,
    status: statusJson(status),
    title: record.title,
    metadata: record.metadata,
    resources: record.resources,
    vault_ids: record.vaultIds,
    budget: record.budget,
    outcome_evaluations: [],
    usage: renderUsage(usage, now),
    stats: renderStats(usage, record.createdAt, now),
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    archived_at: record.archivedAt?.toISOString() ?? null,
    deployment_id: null,
  };
}
