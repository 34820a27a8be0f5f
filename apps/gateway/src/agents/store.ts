/**
 * Agents and their versions in the gateway's database. Every read and write is scoped by
 * tenant: another tenant's agent is simply not found. Updates lock the agent's row, check the
 * caller's expected version (optimistic concurrency) and write a new version only when
 * something changed.
 */
import { isDeepStrictEqual } from "node:util";
import type { Db, Queryable } from "@metaharness/db";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import type { Cursor, TimeIdPosition } from "../http/pagination.js";
import type { AgentBody, AgentRecord } from "./body.js";
import { keysetPage, type KeysetPage } from "../http/keyset.js";

export interface AgentRow {
  agent_id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  body: AgentBody;
}

const COLUMNS = "a.agent_id, v.version, a.created_at, v.created_at AS updated_at, a.archived_at, v.body";

/** A row of COLUMNS as the agent's record (sessions/sources.ts reads one with an environment). */
export function agentRecord(row: AgentRow): AgentRecord {
  return {
    id: row.agent_id,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    archivedAt: row.archived_at,
    body: row.body,
  };
}

export interface AgentListQuery {
  readonly limit: number;
  readonly cursor: Cursor<TimeIdPosition> | undefined;
  readonly createdGte?: Date | undefined;
  readonly createdLte?: Date | undefined;
  readonly includeArchived: boolean;
}

export class AgentStore {
  /** `changed`: after each write that may change an existing agent (sessions.create keeps agents: sessions/sources.ts). */
  constructor(
    private readonly db: Db,
    private readonly changed: () => void = () => undefined,
  ) {}

  async create(tenant: string, id: string, body: AgentBody, now: Date): Promise<AgentRecord> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        "INSERT INTO gw_agents (agent_id, tenant, version, created_at, updated_at) VALUES ($1, $2, 1, $3, $3)",
        [id, tenant, now],
      );
      await tx.query("INSERT INTO gw_agent_versions (agent_id, version, body, created_at) VALUES ($1, 1, $2, $3)", [
        id,
        JSON.stringify(body),
        now,
      ]);
    });
    return { id, version: 1, createdAt: now, updatedAt: now, archivedAt: null, body };
  }

  /** The current version, or `version` when given; undefined when either does not exist. */
  async get(tenant: string, id: string, version?: number, q: Queryable = this.db): Promise<AgentRecord | undefined> {
    const { rows } = await q.query<AgentRow>(
      `SELECT ${COLUMNS} FROM gw_agents a
         JOIN gw_agent_versions v ON v.agent_id = a.agent_id AND v.version = COALESCE($3, a.version)
        WHERE a.agent_id = $1 AND a.tenant = $2`,
      [id, tenant, version ?? null],
    );
    return rows[0] === undefined ? undefined : agentRecord(rows[0]);
  }

  async require(tenant: string, id: string, version?: number): Promise<AgentRecord> {
    const found = await this.get(tenant, id, version);
    if (found !== undefined) return found;
    if (version !== undefined && (await this.get(tenant, id)) !== undefined) {
      throw new ApiError("not_found", `agent ${JSON.stringify(id)} has no version ${version}`);
    }
    throw notFound("agent", id);
  }

  /**
   * Applies `change` to the current version. `expected` (the caller's `version`) must match the
   * current one: 409 otherwise. No change, no new version.
   */
  async update(tenant: string, id: string, expected: number | undefined, change: (body: AgentBody) => AgentBody, now: Date): Promise<AgentRecord> {
    try {
      return await this.updateIn(tenant, id, expected, change, now);
    } finally {
      this.changed();
    }
  }

  private updateIn(tenant: string, id: string, expected: number | undefined, change: (body: AgentBody) => AgentBody, now: Date): Promise<AgentRecord> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ version: number; archived_at: Date | null }>(
        "SELECT version, archived_at FROM gw_agents WHERE agent_id = $1 AND tenant = $2 FOR UPDATE",
        [id, tenant],
      );
      const head = rows[0];
      if (head === undefined) throw notFound("agent", id);
      if (head.archived_at !== null) throw invalidRequest("", `agent ${id} is archived and cannot be updated`);
      const current = Number(head.version);
      if (expected !== undefined && expected !== current) {
        throw new ApiError("conflict", `version: ${expected} is not the agent's current version (${current}); retrieve the agent and apply the update again`);
      }
      const latest = await this.get(tenant, id, current, tx);
      if (latest === undefined) throw notFound("agent", id);
      const body = change(latest.body);
      if (isDeepStrictEqual(body, latest.body)) return latest;
      const version = current + 1;
      await tx.query("INSERT INTO gw_agent_versions (agent_id, version, body, created_at) VALUES ($1, $2, $3, $4)", [
        id,
        version,
        JSON.stringify(body),
        now,
      ]);
      await tx.query("UPDATE gw_agents SET version = $2, updated_at = $3 WHERE agent_id = $1", [id, version, now]);
      return { ...latest, version, updatedAt: now, body };
    });
  }

  /** Idempotent: archiving an archived agent returns it unchanged. */
  async archive(tenant: string, id: string, now: Date): Promise<AgentRecord> {
    try {
      await this.db.query("UPDATE gw_agents SET archived_at = COALESCE(archived_at, $3) WHERE agent_id = $1 AND tenant = $2", [
        id,
        tenant,
        now,
      ]);
    } finally {
      this.changed();
    }
    return this.require(tenant, id);
  }

  /** Newest first, as Anthropic lists agents. */
  async list(tenant: string, q: AgentListQuery): Promise<KeysetPage<AgentRecord>> {
    const where = ["a.tenant = $1"];
    const params: unknown[] = [tenant];
    if (!q.includeArchived) where.push("a.archived_at IS NULL");
    if (q.createdGte !== undefined) {
      params.push(q.createdGte);
      where.push(`a.created_at >= $${params.length}`);
    }
    if (q.createdLte !== undefined) {
      params.push(q.createdLte);
      where.push(`a.created_at <= $${params.length}`);
    }
    const page = await keysetPage<AgentRow>(
      this.db,
      {
        columns: COLUMNS,
        from: "gw_agents a JOIN gw_agent_versions v ON v.agent_id = a.agent_id AND v.version = a.version",
        idColumn: "a.agent_id",
        createdColumn: "a.created_at",
        where,
        params,
        order: "desc",
        limit: q.limit,
        cursor: q.cursor,
      },
      (r) => r.agent_id,
    );
    return { ...page, rows: page.rows.map(agentRecord) };
  }

  /** Newest version first; the cursor is the last version returned. */
  async versions(tenant: string, id: string, limit: number, before: number | undefined): Promise<{ rows: AgentRecord[]; next: number | undefined }> {
    const { rows } = await this.db.query<AgentRow>(
      `SELECT ${COLUMNS} FROM gw_agents a JOIN gw_agent_versions v ON v.agent_id = a.agent_id
        WHERE a.agent_id = $1 AND a.tenant = $2 AND ($3::integer IS NULL OR v.version < $3)
        ORDER BY v.version DESC LIMIT $4`,
      [id, tenant, before ?? null, limit + 1],
    );
    if (rows.length === 0 && before === undefined) throw notFound("agent", id);
    const page = rows.slice(0, limit).map(agentRecord);
    return { rows: page, next: rows.length > limit ? page[page.length - 1]?.version : undefined };
  }
}
