/**
 * The session log's metrics (their meaning: docs/operations.md): appends, the outbox and its
 * relay to Kafka, WatchEvents streams, leases. The gauges are one SQL statement read at each
 * collection (a scrape or an OTLP export), so they say what the database says, across every
 * replica: each replica reports the same values, and dashboards take their max.
 */
import type { Queryable } from "@metaharness/db";
import { METRICS, counter, histogram, observeGauges, upDownCounter } from "@metaharness/telemetry";

export const appendDuration = histogram(METRICS.appendDuration);
export const appendBatchSize = histogram(METRICS.appendBatch);
export const kafkaSent = counter(METRICS.kafkaSent);
export const watchSubscribers = upDownCounter(METRICS.watchSubscribers);
export const leaseTakeovers = counter(METRICS.leaseTakeovers);

// The outbox's count and its oldest row's event age; live leases; sessions with work (running,
// or input not yet answered) whose lease is gone: the same test as ListSessions(orphaned), on
// the partial index sessions_orphan_candidates.
const GAUGES_SQL = `SELECT (SELECT count(*)::int FROM outbox) AS backlog,
  coalesce((SELECT extract(epoch FROM now() - e.created_at)::float8
              FROM (SELECT session_id, seq FROM outbox ORDER BY id LIMIT 1) o
              JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq), 0) AS lag,
  (SELECT count(*)::int FROM sessions WHERE lease_holder IS NOT NULL AND lease_expires_at > now()) AS leases,
  (SELECT count(*)::int FROM sessions WHERE (status = 2 OR awaiting_harness)
      AND (lease_holder IS NULL OR lease_expires_at <= now())) AS waiting`;

/** Registers the database gauges; `stop()` unregisters them (before the pool closes). */
export function observeLogGauges(db: Queryable): { stop(): void } {
  return observeGauges(
    { outboxBacklog: METRICS.outboxBacklog, outboxLag: METRICS.outboxLag, leasesActive: METRICS.leasesActive, sessionsWaiting: METRICS.sessionsWaiting },
    async () => {
      const { rows } = await db.query<{ backlog: number; lag: number; leases: number; waiting: number }>(GAUGES_SQL);
      const r = rows[0];
      return { outboxBacklog: Number(r?.backlog ?? 0), outboxLag: Math.max(0, Number(r?.lag ?? 0)), leasesActive: Number(r?.leases ?? 0), sessionsWaiting: Number(r?.waiting ?? 0) };
    },
  );
}
