/**
 * The gateway's view of sessions: what the API shows beyond the session log (title, metadata,
 * resources, the agent snapshot, archival) and the usage folded from the log so far. Scoped by
 * tenant like every other store. Status and events stay in the session log.
 */
import type { BetaManagedAgentsBudgetLimit, BetaManagedAgentsSessionAgent } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { Db } from "@metaharness/db";
import { notFound } from "../errors/api-error.js";
import type { Cursor, TimeIdPosition } from "../http/pagination.js";
import type { Metadata } from "../http/metadata.js";
import type { SessionResource } from "./resources.js";
import { keysetPage, type KeysetPage, type Order } from "../http/keyset.js";
import { SessionResourceStore } from "./resource-store.js";
import { TargetCache } from "./target-cache.js";

/** Ids only, never a token: the session's own vault and each resource's git_token credential in it. */
export interface ResourceTokens {
  readonly vaultId: string | null;
  /** resource id -> credential id. */
  readonly credentials: Readonly<Record<string, string>>;
}

export const NO_TOKENS: ResourceTokens = { vaultId: null, credentials: {} };

export interface UsageState {
  readonly throughSeq: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheCreationInputTokens: number;
  readonly cacheReadInputTokens: number;
  readonly activeMs: number;
  readonly runningSince: Date | null;
  readonly endedAt: Date | null;
  /** The list cost in cents of the last session.usage folded; null before the first, or unpriced. */
  readonly listCostCents: number | null;
}

export interface SessionRecord {
  readonly id: string;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly agent: BetaManagedAgentsSessionAgent;
  readonly environmentId: string;
  readonly environmentType: "cloud" | "self_hosted";
  readonly title: string | null;
  readonly metadata: Metadata;
  readonly resources: SessionResource[];
  readonly vaultIds: string[];
  /** Where the resources' tokens are: the session's own vault in the credential proxy, if made. */
  readonly tokens: ResourceTokens;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly archivedAt: Date | null;
  /** The spend ceiling in force; null: uncapped. */
  readonly budget: BetaManagedAgentsBudgetLimit | null;
  readonly usage: UsageState;
}

interface SessionRow {
  session_id: string;
  agent_id: string;
  agent_version: number;
  agent: BetaManagedAgentsSessionAgent;
  environment_id: string;
  environment_type: "cloud" | "self_hosted";
  title: string | null;
  metadata: Metadata;
  resources: SessionResource[];
  vault_ids: string[];
  credential_vault_id: string | null;
  resource_credentials: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  usage_through_seq: string | number;
  input_tokens: string | number;
  output_tokens: string | number;
  cache_creation_input_tokens: string | number;
  cache_read_input_tokens: string | number;
  active_ms: string | number;
  running_since: Date | null;
  ended_at: Date | null;
  budget: BetaManagedAgentsBudgetLimit | null;
  list_cost_cents: string | number | null;
}

const COLUMNS = `session_id, agent_id, agent_version, agent, environment_id, environment_type, title, metadata, resources,
  vault_ids, credential_vault_id, resource_credentials, created_at, updated_at, archived_at, usage_through_seq, input_tokens, output_tokens,
  cache_creation_input_tokens, cache_read_input_tokens, active_ms, running_since, ended_at, budget, list_cost_cents`;

export const NO_USAGE: UsageState = {
  throughSeq: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheCreationInputTokens: 0,
  cacheReadInputTokens: 0,
  activeMs: 0,
  runningSince: null,
  endedAt: null,
  listCostCents: null,
};

function record(r: SessionRow): SessionRecord {
  return {
    id: r.session_id,
    agentId: r.agent_id,
    agentVersion: Number(r.agent_version),
    agent: r.agent,
    environmentId: r.environment_id,
    environmentType: r.environment_type,
    title: r.title,
    metadata: r.metadata,
    resources: r.resources,
    vaultIds: r.vault_ids,
    tokens: { vaultId: r.credential_vault_id, credentials: r.resource_credentials },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    archivedAt: r.archived_at,
    budget: r.budget,
    usage: {
      throughSeq: Number(r.usage_through_seq),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheCreationInputTokens: Number(r.cache_creation_input_tokens),
      cacheReadInputTokens: Number(r.cache_read_input_tokens),
      activeMs: Number(r.active_ms),
      runningSince: r.running_since,
      endedAt: r.ended_at,
      listCostCents: r.list_cost_cents === null ? null : Number(r.list_cost_cents),
    },
  };
}

export type NewSession = Omit<SessionRecord, "updatedAt" | "archivedAt" | "usage">;

/**
 * What sending input to a session and reading its events need of the record: read without the
 * agent snapshot, resources and usage, which Postgres would send and pg parse on every turn.
 */
export type SessionTarget = Pick<SessionRecord, "id" | "environmentId" | "environmentType" | "metadata" | "archivedAt">;

export interface SessionListQuery {
  readonly limit: number;
  readonly cursor: Cursor<TimeIdPosition> | undefined;
  readonly order: Order;
  readonly agentId?: string | undefined;
  readonly agentVersion?: number | undefined;
  readonly created: ReadonlyArray<readonly [">" | ">=" | "<" | "<=", Date]>;
  readonly includeArchived: boolean;
}

export class SessionStore {
  /** Changes to one resource at a time (resource-store.ts). */
  readonly resources: SessionResourceStore;

  constructor(
    private readonly db: Db,
    /** Targets kept in memory (target-cache.ts); none kept unless it listens for changes. */
    private readonly targets: TargetCache<SessionTarget> = new TargetCache(0),
  ) {
    this.resources = new SessionResourceStore(db);
  }

  async create(tenant: string, s: NewSession): Promise<SessionRecord> {
    const version = this.targets.version;
    await this.db.query(
      `INSERT INTO gw_sessions (session_id, tenant, agent_id, agent_version, agent, environment_id, environment_type, title,
         metadata, resources, vault_ids, created_at, updated_at, credential_vault_id, resource_credentials, budget)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15)`,
      [
        s.id,
        tenant,
        s.agentId,
        s.agentVersion,
        JSON.stringify(s.agent),
        s.environmentId,
        s.environmentType,
        s.title,
        JSON.stringify(s.metadata),
        JSON.stringify(s.resources),
        JSON.stringify(s.vaultIds),
        s.createdAt,
        s.tokens.vaultId,
        JSON.stringify(s.tokens.credentials),
        s.budget === null ? null : JSON.stringify(s.budget),
      ],
    );
    // Kept as written: the stream the client opens next and its first send read no row.
    this.targets.keep(version, tenant, s.id, { id: s.id, environmentId: s.environmentId, environmentType: s.environmentType, metadata: s.metadata, archivedAt: null });
    return { ...s, updatedAt: s.createdAt, archivedAt: null, usage: NO_USAGE };
  }

  async get(tenant: string, id: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.db.query<SessionRow>(`SELECT ${COLUMNS} FROM gw_sessions WHERE session_id = $1 AND tenant = $2`, [id, tenant]);
    return rows[0] === undefined ? undefined : record(rows[0]);
  }

  async require(tenant: string, id: string): Promise<SessionRecord> {
    const found = await this.get(tenant, id);
    if (found === undefined) throw notFound("session", id);
    return found;
  }

  /** The session's target fields (SessionTarget), or 404 when the tenant has no such session; from memory when kept. */
  async requireTarget(tenant: string, id: string): Promise<SessionTarget> {
    const kept = this.targets.get(tenant, id);
    if (kept !== undefined) return kept;
    const version = this.targets.version;
    const { rows } = await this.db.query<Pick<SessionRow, "session_id" | "environment_id" | "environment_type" | "metadata" | "archived_at">>(
      "SELECT session_id, environment_id, environment_type, metadata, archived_at FROM gw_sessions WHERE session_id = $1 AND tenant = $2",
      [id, tenant],
    );
    const r = rows[0];
    if (r === undefined) throw notFound("session", id);
    const target: SessionTarget = { id: r.session_id, environmentId: r.environment_id, environmentType: r.environment_type, metadata: r.metadata, archivedAt: r.archived_at };
    this.targets.keep(version, tenant, id, target);
    return target;
  }

  async update(
    tenant: string,
    id: string,
    changes: { title?: string | null; metadata?: Metadata; agent?: BetaManagedAgentsSessionAgent; budget?: BetaManagedAgentsBudgetLimit | null },
    now: Date,
  ): Promise<SessionRecord> {
    const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));
    const { rowCount } = await this.db.query(
      `UPDATE gw_sessions SET
         title = CASE WHEN $3 THEN $4 ELSE title END,
         metadata = COALESCE($5::jsonb, metadata),
         agent = COALESCE($7::jsonb, agent),
         budget = CASE WHEN $8 THEN $9::jsonb ELSE budget END,
         updated_at = $6
       WHERE session_id = $1 AND tenant = $2`,
      [id, tenant, changes.title !== undefined, changes.title ?? null, json(changes.metadata), now, json(changes.agent), changes.budget !== undefined, json(changes.budget ?? undefined)],
    );
    // Other instances hear it from the row's trigger; this one forgets at once.
    this.targets.forget(id);
    if (rowCount === 0) throw notFound("session", id);
    return this.require(tenant, id);
  }

  async archive(tenant: string, id: string, now: Date): Promise<SessionRecord> {
    await this.db.query(
      "UPDATE gw_sessions SET archived_at = COALESCE(archived_at, $3), updated_at = $3 WHERE session_id = $1 AND tenant = $2",
      [id, tenant, now],
    );
    this.targets.forget(id);
    return this.require(tenant, id);
  }

  /** Deletes the record; returns the session's own vault as it was at that moment (a concurrent add may have made it). */
  async delete(tenant: string, id: string): Promise<string | null> {
    const { rows } = await this.db.query<{ credential_vault_id: string | null }>(
      "DELETE FROM gw_sessions WHERE session_id = $1 AND tenant = $2 RETURNING credential_vault_id",
      [id, tenant],
    );
    this.targets.forget(id);
    if (rows[0] === undefined) throw notFound("session", id);
    return rows[0].credential_vault_id;
  }

  /** Saves folded usage unless another request folded further meanwhile. */
  async saveUsage(id: string, from: number, usage: UsageState): Promise<void> {
    await this.db.query(
      `UPDATE gw_sessions SET usage_through_seq = $3, input_tokens = $4, output_tokens = $5, cache_creation_input_tokens = $6,
         cache_read_input_tokens = $7, active_ms = $8, running_since = $9, ended_at = $10, list_cost_cents = $11
       WHERE session_id = $1 AND usage_through_seq = $2`,
      [
        id,
        from,
        usage.throughSeq,
        usage.inputTokens,
        usage.outputTokens,
        usage.cacheCreationInputTokens,
        usage.cacheReadInputTokens,
        usage.activeMs,
        usage.runningSince,
        usage.endedAt,
        usage.listCostCents,
      ],
    );
  }

  async list(tenant: string, q: SessionListQuery): Promise<KeysetPage<SessionRecord>> {
    const where = ["tenant = $1"];
    const params: unknown[] = [tenant];
    const add = (sql: (n: string) => string, value: unknown): void => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (!q.includeArchived) where.push("archived_at IS NULL");
    if (q.agentId !== undefined) add((n) => `agent_id = ${n}`, q.agentId);
    if (q.agentId !== undefined && q.agentVersion !== undefined) add((n) => `agent_version = ${n}`, q.agentVersion);
    for (const [op, at] of q.created) add((n) => `created_at ${op} ${n}`, at);
    const page = await keysetPage<SessionRow>(
      this.db,
      { columns: COLUMNS, from: "gw_sessions", idColumn: "session_id", createdColumn: "created_at", where, params, order: q.order, limit: q.limit, cursor: q.cursor },
      (r) => r.session_id,
    );
    return { ...page, rows: page.rows.map(record) };
  }
}
