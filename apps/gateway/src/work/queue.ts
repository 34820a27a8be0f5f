/**
 * The work queue of self-hosted environments, in the gateway's database (gw_work): what the
 * gateway queues for a session, what a poll claims and an ack takes on. Every state change locks
 * the item's row, and a poll claims with FOR UPDATE SKIP LOCKED, so any number of gateway
 * instances and workers share the queue and no item is handed out twice at once. Leases
 * (heartbeat, stop) are in lease.ts.
 */
import { randomBytes } from "node:crypto";
import type { Db, Queryable } from "@metaharness/db";
import { hashKey } from "../auth/api-keys.js";
import { WORK_TOKEN_PREFIX } from "../auth/key-prefixes.js";
import { ApiError, notFound } from "../errors/api-error.js";
import type { Cursor, TimeIdPosition } from "../http/pagination.js";
import { newId } from "../ids.js";
import type { Metadata } from "../http/metadata.js";
import { keysetPage, type KeysetPage } from "../http/keyset.js";
import { tokenCurrentSql } from "../auth/work-tokens.js";
import { WORK_COLUMNS, workRecord, type WorkRecord, type WorkRow } from "./record.js";

export const WORK_ID_PREFIX = "work_";
/** A poll reclaims items delivered but not acknowledged for this long, unless it says otherwise. */
export const DEFAULT_RECLAIM_MS = 5000;
/** workers_polling counts the workers that polled within this window. */
const POLLING_WINDOW_MS = 30_000;

export interface QueueStats {
  readonly depth: number;
  readonly pending: number;
  readonly oldestQueuedAt: Date | null;
  readonly workersPolling: number;
}

/** Locks and reads one item of an environment, or throws not found. */
export async function lockWork(tx: Queryable, environmentId: string, workId: string): Promise<WorkRecord> {
  const { rows } = await tx.query<WorkRow>(`SELECT ${WORK_COLUMNS} FROM gw_work WHERE work_id = $1 AND environment_id = $2 FOR UPDATE`, [
    workId,
    environmentId,
  ]);
  if (rows[0] === undefined) throw notFound("work item", workId);
  return workRecord(rows[0]);
}

export class WorkQueue {
  constructor(private readonly db: Db) {}

  /**
   * Queues an item for the session unless it has a live one (or its environment is gone).
   * Returns whether one was queued.
   */
  async enqueue(s: { tenant: string; environmentId: string; sessionId: string; metadata: Metadata }, now: Date): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO gw_work (work_id, tenant, environment_id, session_id, state, metadata, created_at)
       SELECT $1, $2, $3, $4, 'queued', $5, $6 WHERE EXISTS (SELECT 1 FROM gw_environments WHERE environment_id = $3)
       ON CONFLICT (session_id) WHERE state IN ('queued', 'starting', 'active') DO NOTHING`,
      [newId(WORK_ID_PREFIX), s.tenant, s.environmentId, s.sessionId, JSON.stringify(s.metadata), now],
    );
    return rowCount > 0;
  }

  /**
   * Hands the oldest claimable item of the environment to a poll: a queued one not delivered
   * within `reclaimMs`, or one whose lease lapsed (its worker died). It goes (back) to queued with
   * a new delivery and a fresh sessions token; tokens of earlier deliveries are fenced off.
   */
  async claim(environmentId: string, workerId: string | undefined, reclaimMs: number, now: Date): Promise<{ work: WorkRecord; token: string } | undefined> {
    if (workerId !== undefined) await this.notePoller(environmentId, workerId, now);
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<WorkRow>(
        `WITH next AS (
           SELECT work_id FROM gw_work
            WHERE environment_id = $1
              AND ((state = 'queued' AND (delivered_at IS NULL OR delivered_at <= $2))
                OR (state IN ('starting', 'active') AND lease_expires_at < $3))
            ORDER BY created_at, work_id
            LIMIT 1
            FOR UPDATE SKIP LOCKED)
         UPDATE gw_work w
            SET state = 'queued', delivery = w.delivery + 1, delivered_at = $3, worker_id = $4,
                acknowledged_at = NULL, latest_heartbeat_at = NULL, lease_expires_at = NULL
           FROM next WHERE w.work_id = next.work_id
         RETURNING ${WORK_COLUMNS.split(",").map((c) => `w.${c.trim()}`).join(", ")}`,
        [environmentId, new Date(now.getTime() - reclaimMs), now, workerId ?? null],
      );
      if (rows[0] === undefined) return undefined;
      const work = workRecord(rows[0]);
      const token = WORK_TOKEN_PREFIX + randomBytes(32).toString("base64url");
      await tx.query("INSERT INTO gw_work_tokens (token_hash, work_id, delivery, created_at) VALUES ($1, $2, $3, $4)", [
        hashKey(token),
        work.id,
        work.delivery,
        now,
      ]);
      return { work, token };
    });
  }

  /**
   * queued -> starting. Repeating it is harmless; an item delivered to another worker (by
   * Anthropic-Worker-ID), not delivered yet, or stopping/stopped is a conflict.
   */
  async ack(environmentId: string, workId: string, workerId: string | undefined, now: Date, ttlSeconds: number): Promise<WorkRecord> {
    return this.db.transaction(async (tx) => {
      const work = await lockWork(tx, environmentId, workId);
      if (work.state === "stopping" || work.state === "stopped") throw new ApiError("conflict", `work item ${workId} is ${work.state}`);
      if (workerId !== undefined && work.workerId !== null && workerId !== work.workerId) {
        throw new ApiError("conflict", `work item ${workId} was delivered to another worker`);
      }
      if (work.state !== "queued") return work;
      if (work.delivery === 0) throw new ApiError("conflict", `work item ${workId} was not delivered by a poll yet; poll for it first`);
      const leaseExpiresAt = new Date(now.getTime() + ttlSeconds * 1000);
      await tx.query(
        "UPDATE gw_work SET state = 'starting', acknowledged_at = $2, lease_expires_at = $3, lease_ttl_seconds = $4 WHERE work_id = $1",
        [workId, now, leaseExpiresAt, ttlSeconds],
      );
      return { ...work, state: "starting", acknowledgedAt: now, leaseExpiresAt, leaseTtlSeconds: ttlSeconds };
    });
  }

  async get(environmentId: string, workId: string): Promise<WorkRecord> {
    const { rows } = await this.db.query<WorkRow>(`SELECT ${WORK_COLUMNS} FROM gw_work WHERE work_id = $1 AND environment_id = $2`, [
      workId,
      environmentId,
    ]);
    if (rows[0] === undefined) throw notFound("work item", workId);
    return workRecord(rows[0]);
  }

  async updateMetadata(environmentId: string, workId: string, change: (m: Metadata) => Metadata): Promise<WorkRecord> {
    return this.db.transaction(async (tx) => {
      const work = await lockWork(tx, environmentId, workId);
      const metadata = change(work.metadata);
      await tx.query("UPDATE gw_work SET metadata = $2 WHERE work_id = $1", [workId, JSON.stringify(metadata)]);
      return { ...work, metadata };
    });
  }

  /** Newest first. */
  async list(environmentId: string, q: { limit: number; cursor: Cursor<TimeIdPosition> | undefined }): Promise<KeysetPage<WorkRecord>> {
    const page = await keysetPage<WorkRow>(
      this.db,
      {
        columns: WORK_COLUMNS,
        from: "gw_work",
        idColumn: "work_id",
        createdColumn: "created_at",
        where: ["environment_id = $1"],
        params: [environmentId],
        order: "desc",
        limit: q.limit,
        cursor: q.cursor,
      },
      (r) => r.work_id,
    );
    return { ...page, rows: page.rows.map(workRecord) };
  }

  async stats(environmentId: string, now: Date): Promise<QueueStats> {
    const { rows } = await this.db.query<{ depth: string; pending: string; oldest: Date | null }>(
      `SELECT count(*) FILTER (WHERE state = 'queued' AND delivered_at IS NULL) AS depth,
              count(*) FILTER (WHERE state = 'queued' AND delivered_at IS NOT NULL) AS pending,
              min(created_at) FILTER (WHERE state = 'queued') AS oldest
         FROM gw_work WHERE environment_id = $1 AND state IN ('queued', 'starting', 'active')`,
      [environmentId],
    );
    const since = new Date(now.getTime() - POLLING_WINDOW_MS);
    // Workers come and go (a default worker id is new each run): forget the long gone ones here.
    await this.db.query("DELETE FROM gw_work_pollers WHERE environment_id = $1 AND last_poll_at < $2", [environmentId, new Date(now.getTime() - 3_600_000)]);
    const polling = await this.db.query<{ n: string }>("SELECT count(*) AS n FROM gw_work_pollers WHERE environment_id = $1 AND last_poll_at > $2", [
      environmentId,
      since,
    ]);
    const r = rows[0];
    return {
      depth: Number(r?.depth ?? 0),
      pending: Number(r?.pending ?? 0),
      oldestQueuedAt: r?.oldest ?? null,
      workersPolling: Number(polling.rows[0]?.n ?? 0),
    };
  }

  /** Whether a sessions token of `delivery` still acts for the item's session (auth/work-tokens.ts tokenCurrentSql). */
  async tokenCurrent(workId: string, delivery: number, now: Date): Promise<boolean> {
    const { rows } = await this.db.query<{ current: boolean }>(`SELECT ${tokenCurrentSql("$2", "$3")} AS current FROM gw_work w WHERE w.work_id = $1`, [
      workId,
      delivery,
      now,
    ]);
    return rows[0]?.current === true;
  }

  /** A deleted session needs no hands: queued items stop, held ones are asked to stop. */
  async stopForSession(sessionId: string, now: Date): Promise<void> {
    await this.db.query(
      `UPDATE gw_work
          SET state = CASE WHEN state = 'active' THEN 'stopping' ELSE 'stopped' END,
              stop_requested_at = COALESCE(stop_requested_at, $2),
              stopped_at = CASE WHEN state = 'active' THEN stopped_at ELSE $2 END
        WHERE session_id = $1 AND state IN ('queued', 'starting', 'active')`,
      [sessionId, now],
    );
  }

  /** At most one write per worker every few seconds: polls come about once a second. */
  private async notePoller(environmentId: string, workerId: string, now: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO gw_work_pollers (environment_id, worker_id, last_poll_at) VALUES ($1, $2, $3)
       ON CONFLICT (environment_id, worker_id) DO UPDATE SET last_poll_at = EXCLUDED.last_poll_at
       WHERE gw_work_pollers.last_poll_at < EXCLUDED.last_poll_at - interval '5 seconds'`,
      [environmentId, workerId, now],
    );
  }
}
