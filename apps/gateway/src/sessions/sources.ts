/**
 * What a new session is made of, read in one statement: the agent's version it names (the
 * current one unless it names a version) and the environment, both of the tenant. Two reads were
 * two round trips on every `sessions.create` (issue 31); the rows are the stores' own
 * (agents/store.ts, environments/store.ts), so they map as those stores map them. The answer also
 * says whether the agent exists at all, so a missing version is told apart without a second read.
 * What was found is kept in memory (a TargetCache on its own channel, migration 008): a session's
 * sources are read once, not on every sessions.create (issue 31). Any change to an agent, its
 * versions or an environment drops every copy: at once for one made through this instance (the
 * stores call `forgetAll`), through NOTIFY for one made elsewhere, and a copy is kept at most
 * MH_GATEWAY_TARGET_CACHE_MS for a NOTIFY lost without an error. Only what exists is kept: a
 * missing agent, version or environment is read every time, as are bodies too large to keep. A copy
 * is cloned once as it is kept and frozen whole, then handed out as it is: a caller that changed
 * what it got would fail loudly (a TypeError) rather than change another's. A clone on every hit
 * (structuredClone) was 1.5% of the gateway's busy samples at 16 single-turn sessions (issue 31).
 */
import type { Queryable } from "@metaharness/db";
import type { AgentRecord } from "../agents/body.js";
import { agentRecord } from "../agents/store.js";
import type { EnvironmentRecord } from "../environments/body.js";
import { environmentRecord } from "../environments/store.js";
import { TargetCache } from "./target-cache.js";

/** The channel migration 008's triggers notify when an agent, its versions or an environment change. */
export const SESSION_SOURCES_CHANNEL = "mh_gw_session_sources";

export type SourcesCache = TargetCache<SessionSources>;

/**
 * Bounds on what is kept: agents and environments a deployment's sessions are made from are few,
 * but a body is bounded only by the request's (MH_GATEWAY_BODY_LIMIT_BYTES), so sources whose
 * bodies pass MAX_KEPT_BODY_CHARS as JSON are read every time: 1,000 copies of 64 KiB of JSON at most.
 */
const MAX_KEPT_SOURCES = 1_000;
const MAX_KEPT_BODY_CHARS = 64 * 1024;

/** A cache of sessions' sources, every copy dropped by any change heard on SESSION_SOURCES_CHANNEL. */
export function sourcesCache(maxAgeMs: number): SourcesCache {
  return new TargetCache<SessionSources>(maxAgeMs, { channel: SESSION_SOURCES_CHANNEL, scope: "all", maxKept: MAX_KEPT_SOURCES });
}

function small(s: SessionSources): boolean {
  return JSON.stringify(s.agent?.body ?? null).length + JSON.stringify(s.environment?.body ?? null).length <= MAX_KEPT_BODY_CHARS;
}

export interface SessionSources {
  /** The agent's version; undefined when the agent or that version does not exist. */
  readonly agent: AgentRecord | undefined;
  /** Whether the tenant has the agent (in any version). */
  readonly agentExists: boolean;
  readonly environment: EnvironmentRecord | undefined;
}

interface SourcesRow {
  agent_exists: boolean;
  agent_id: string | null;
  version: number | null;
  agent_created_at: Date;
  agent_updated_at: Date;
  agent_archived_at: Date | null;
  agent_body: AgentRecord["body"];
  environment_id: string | null;
  environment_created_at: Date;
  environment_updated_at: Date;
  environment_archived_at: Date | null;
  environment_body: EnvironmentRecord["body"];
}

// One row whatever exists: each side joined to a row of nothing.
const SOURCES_SQL = `SELECT a.agent_id IS NOT NULL AS agent_exists, v.agent_id, v.version, a.created_at AS agent_created_at,
       v.created_at AS agent_updated_at, a.archived_at AS agent_archived_at, v.body AS agent_body,
       e.environment_id, e.created_at AS environment_created_at, e.updated_at AS environment_updated_at,
       e.archived_at AS environment_archived_at, e.body AS environment_body
  FROM (SELECT 1) one
  LEFT JOIN gw_agents a ON a.agent_id = $1 AND a.tenant = $2
  LEFT JOIN gw_agent_versions v ON v.agent_id = a.agent_id AND v.version = COALESCE($3, a.version)
  LEFT JOIN gw_environments e ON e.environment_id = $4 AND e.tenant = $2`;

export async function readSessionSources(
  db: Queryable,
  cache: SourcesCache,
  tenant: string,
  agent: { id: string; version: number | undefined },
  environmentId: string,
): Promise<SessionSources> {
  const key = `${agent.id}\n${agent.version ?? "current"}\n${environmentId}`;
  const kept = cache.get(tenant, key);
  if (kept !== undefined) return kept;
  const version = cache.version;
  const read = await readFromDb(db, tenant, agent, environmentId);
  if (read.agent !== undefined && read.environment !== undefined && small(read)) cache.keep(version, tenant, key, deepFreeze(structuredClone(read)));
  return read;
}

/** Freezes `value` and everything it holds: what a row maps to, JSON and Dates (whose time nothing here sets). */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}

async function readFromDb(db: Queryable, tenant: string, agent: { id: string; version: number | undefined }, environmentId: string): Promise<SessionSources> {
  const { rows } = await db.query<SourcesRow>(SOURCES_SQL, [agent.id, tenant, agent.version ?? null, environmentId]);
  const r = rows[0];
  if (r === undefined) return { agent: undefined, agentExists: false, environment: undefined };
  return {
    agentExists: r.agent_exists,
    agent:
      r.agent_id === null || r.version === null
        ? undefined
        : agentRecord({ agent_id: r.agent_id, version: r.version, created_at: r.agent_created_at, updated_at: r.agent_updated_at, archived_at: r.agent_archived_at, body: r.agent_body }),
    environment:
      r.environment_id === null
        ? undefined
        : environmentRecord({
            environment_id: r.environment_id,
            created_at: r.environment_created_at,
            updated_at: r.environment_updated_at,
            archived_at: r.environment_archived_at,
            body: r.environment_body,
          }),
  };
}
