/**
 * Environments in the gateway's database, scoped by tenant. Sessions snapshot the stored config
 * when they are created.
 */
import type { Db } from "@metaharness/db";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import type { Cursor, TimeIdPosition } from "../http/pagination.js";
import type { EnvironmentBody, EnvironmentRecord } from "./body.js";
import { keysetPage, type KeysetPage } from "../http/keyset.js";

export interface EnvironmentRow {
  environment_id: string;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  body: EnvironmentBody;
}

const COLUMNS = "environment_id, created_at, updated_at, archived_at, body";

/** A row of COLUMNS as the environment's record (sessions/sources.ts reads one with an agent). */
export function environmentRecord(row: EnvironmentRow): EnvironmentRecord {
  return { id: row.environment_id, createdAt: row.created_at, updatedAt: row.updated_at, archivedAt: row.archived_at, body: row.body };
}

export class EnvironmentStore {
  /** `changed`: after each write that may change an existing environment (sessions.create keeps them: sessions/sources.ts). */
  constructor(
    private readonly db: Db,
    private readonly changed: () => void = () => undefined,
  ) {}

  async create(tenant: string, id: string, body: EnvironmentBody, now: Date): Promise<EnvironmentRecord> {
    await this.db.query(
      "INSERT INTO gw_environments (environment_id, tenant, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)",
      [id, tenant, JSON.stringify(body), now],
    );
    return { id, createdAt: now, updatedAt: now, archivedAt: null, body };
  }

  async get(tenant: string, id: string): Promise<EnvironmentRecord | undefined> {
    const { rows } = await this.db.query<EnvironmentRow>(
      `SELECT ${COLUMNS} FROM gw_environments WHERE environment_id = $1 AND tenant = $2`,
      [id, tenant],
    );
    return rows[0] === undefined ? undefined : environmentRecord(rows[0]);
  }

  async require(tenant: string, id: string): Promise<EnvironmentRecord> {
    const found = await this.get(tenant, id);
    if (found === undefined) throw notFound("environment", id);
    return found;
  }

  /** The environment, which must be self_hosted for what `why` names (400 on environment_id otherwise). */
  async requireSelfHosted(tenant: string, id: string, why: string): Promise<EnvironmentRecord> {
    const env = await this.require(tenant, id);
    if (env.body.config.type !== "self_hosted") throw invalidRequest("environment_id", `environment ${env.id} is not self_hosted: ${why}`);
    return env;
  }

  async update(tenant: string, id: string, change: (body: EnvironmentBody) => EnvironmentBody, now: Date): Promise<EnvironmentRecord> {
    try {
      return await this.updateIn(tenant, id, change, now);
    } finally {
      this.changed();
    }
  }

  private updateIn(tenant: string, id: string, change: (body: EnvironmentBody) => EnvironmentBody, now: Date): Promise<EnvironmentRecord> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<EnvironmentRow>(
        `SELECT ${COLUMNS} FROM gw_environments WHERE environment_id = $1 AND tenant = $2 FOR UPDATE`,
        [id, tenant],
      );
      const row = rows[0];
      if (row === undefined) throw notFound("environment", id);
      if (row.archived_at !== null) throw new ApiError("environment_archived", `environment ${id} is archived and cannot be updated`);
      const body = change(row.body);
      await tx.query("UPDATE gw_environments SET body = $2, updated_at = $3 WHERE environment_id = $1", [id, JSON.stringify(body), now]);
      return { ...environmentRecord(row), updatedAt: now, body };
    });
  }

  async archive(tenant: string, id: string, now: Date): Promise<EnvironmentRecord> {
    try {
      await this.db.query(
        "UPDATE gw_environments SET archived_at = COALESCE(archived_at, $3) WHERE environment_id = $1 AND tenant = $2",
        [id, tenant, now],
      );
    } finally {
      this.changed();
    }
    return this.require(tenant, id);
  }

  /** Deletes the environment; sessions that named it keep its id. */
  async delete(tenant: string, id: string): Promise<void> {
    let rowCount: number | null;
    try {
      ({ rowCount } = await this.db.query("DELETE FROM gw_environments WHERE environment_id = $1 AND tenant = $2", [id, tenant]));
    } finally {
      this.changed();
    }
    if (rowCount === 0) throw notFound("environment", id);
  }

  /** Newest first. */
  async list(
    tenant: string,
    q: { limit: number; cursor: Cursor<TimeIdPosition> | undefined; includeArchived: boolean },
  ): Promise<KeysetPage<EnvironmentRecord>> {
    const page = await keysetPage<EnvironmentRow>(
      this.db,
      {
        columns: COLUMNS,
        from: "gw_environments",
        idColumn: "environment_id",
        createdColumn: "created_at",
        where: q.includeArchived ? ["tenant = $1"] : ["tenant = $1", "archived_at IS NULL"],
        params: [tenant],
        order: "desc",
        limit: q.limit,
        cursor: q.cursor,
      },
      (r) => r.environment_id,
    );
    return { ...page, rows: page.rows.map(environmentRecord) };
  }
}
