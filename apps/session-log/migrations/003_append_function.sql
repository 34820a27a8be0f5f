-- The append path as one statement: mh_append writes a batch of append requests (from any
-- sessions, several of the same session allowed) in one transaction, and reports
-- each request's outcome instead of raising, so one request's conflict does not undo the others.
-- One round trip and one commit (one WAL flush) for the whole batch: see src/store/append.ts.

-- Protobuf base-128 varint of a non-negative n.
CREATE FUNCTION mh_varint(n bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  out bytea := '\x'::bytea;
BEGIN
  WHILE n >= 128 LOOP
    out := out || set_byte('\x00'::bytea, 0, ((n & 127) | 128)::int);
    n := n >> 7;
  END LOOP;
  RETURN out || set_byte('\x00'::bytea, 0, n::int);
END $$;

-- Requests are parallel arrays (one element per request); their events are concatenated in
-- request order into the event arrays, p_counts[r] of them for request r. An event body is the
-- encoded metaharness.v1.Event without its seq: the seq is assigned here and appended to the
-- body as field 3 (protobuf fields may come in any order), so the stored body is the event
-- exactly as served. p_statuses / p_awaiting hold, per event, the session status and
-- awaiting_harness the event sets (null: unchanged; the last new event that sets one wins), and
-- p_shards the outbox shard of each request's session.
--
-- Rows returned, per request r (1-based index into the request arrays):
--   outcome 0 (appended, or all duplicates): one row per event, in order: its seq, the session's
--            last seq after the request in cur, and the stored body when the event is a
--            duplicate (appended before; returned as first appended);
--   outcome 1: the session does not exist;
--   outcome 2: p_epochs[r] is stale; cur is the session's lease epoch;
--   outcome 3: p_expected[r] does not match; cur is the session's last seq;
--   outcome 4: the session is terminated.
-- A request whose events were all appended before succeeds whatever the session's state (that
-- is what makes retries safe); the checks apply only when there is something new to write.
-- Sessions that grew are announced on p_channel as "<session_id>:<last_seq>" items after the
-- payload prefix p_notify (watch/hub.ts).
CREATE FUNCTION mh_append(
  p_sessions   text[],
  p_expected   bigint[],
  p_epochs     bigint[],
  p_shards     smallint[],
  p_counts     int[],
  p_ids        text[],
  p_types      text[],
  p_statuses   smallint[],
  p_awaiting   boolean[],
  p_bodies     bytea[],
  p_created_at timestamptz,
  p_channel    text,
  p_notify     text
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE plpgsql
-- Plan each statement once per connection: every lookup is by a whole key, so the generic plan is
-- the right one, and re-planning each call (custom plans) was a fifth of the function's time.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  r int;
  starts int[];
  lo int;
  hi int;
  sid text;
  head record;
  dups text[];
  fresh int;
  grown text[] := '{}';
BEGIN
  -- Where each request's events start in the event arrays.
  SELECT array_agg(x.start ORDER BY x.o) INTO starts
    FROM (SELECT o, sum(c) OVER (ORDER BY o) - c + 1 AS start FROM unnest(p_counts) WITH ORDINALITY AS u(c, o)) x;
  -- Requests go in session order (and in arrival order within a session), so every batch locks
  -- its sessions in the same order and concurrent batches (other instances) never deadlock.
  -- Every lookup below is an equality on a whole unique key, so its plan is an index scan
  -- whatever the statistics say (a fresh database has none).
  FOR r IN SELECT u.o FROM unnest(p_sessions) WITH ORDINALITY AS u(s, o) ORDER BY u.s, u.o LOOP
    sid := p_sessions[r];
    lo := starts[r];
    hi := lo + p_counts[r] - 1;
    SELECT s.last_seq, s.lease_epoch, s.status INTO head FROM sessions s WHERE s.session_id = sid FOR UPDATE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT r, 1::smallint, NULL::bigint, NULL::bigint, NULL::bytea;
      CONTINUE;
    END IF;
    SELECT coalesce(array_agg(x.i) FILTER (WHERE (SELECT true FROM events e WHERE e.session_id = sid AND e.event_id = x.i)), '{}')
      INTO dups FROM unnest(p_ids[lo:hi]) AS x(i);
    fresh := p_counts[r] - cardinality(dups);
    IF fresh > 0 AND p_epochs[r] IS NOT NULL AND p_epochs[r] <> head.lease_epoch THEN
      RETURN QUERY SELECT r, 2::smallint, NULL::bigint, head.lease_epoch, NULL::bytea;
    ELSIF fresh > 0 AND p_expected[r] IS NOT NULL AND p_expected[r] <> head.last_seq THEN
      RETURN QUERY SELECT r, 3::smallint, NULL::bigint, head.last_seq, NULL::bytea;
    ELSIF fresh > 0 AND head.status = 3 THEN
      RETURN QUERY SELECT r, 4::smallint, NULL::bigint, head.last_seq, NULL::bytea;
    ELSE
      IF fresh > 0 THEN
        -- The new events take the next seqs, in request order.
        WITH novel AS (
          SELECT x.i, x.t, x.b, head.last_seq + row_number() OVER (ORDER BY x.k) AS n
            FROM unnest(p_ids[lo:hi], p_types[lo:hi], p_bodies[lo:hi]) WITH ORDINALITY AS x(i, t, b, k)
           WHERE x.i <> ALL (dups)
        ), ins AS (
          INSERT INTO events (session_id, seq, event_id, type, created_at, body)
          SELECT sid, v.n, v.i, v.t, p_created_at, v.b || '\x18'::bytea || mh_varint(v.n) FROM novel v
          RETURNING events.seq
        )
        INSERT INTO outbox (shard, session_id, seq) SELECT p_shards[r], sid, ins.seq FROM ins;
        UPDATE sessions s
           SET last_seq = head.last_seq + fresh,
               status = coalesce((SELECT x.st FROM unnest(p_ids[lo:hi], p_statuses[lo:hi]) WITH ORDINALITY AS x(i, st, k)
                                   WHERE x.st IS NOT NULL AND x.i <> ALL (dups) ORDER BY x.k DESC LIMIT 1), s.status),
               awaiting_harness = coalesce((SELECT x.aw FROM unnest(p_ids[lo:hi], p_awaiting[lo:hi]) WITH ORDINALITY AS x(i, aw, k)
                                             WHERE x.aw IS NOT NULL AND x.i <> ALL (dups) ORDER BY x.k DESC LIMIT 1),
                                           s.awaiting_harness),
               updated_at = p_created_at
         WHERE s.session_id = sid;
        grown := grown || (sid || ':' || (head.last_seq + fresh));
      END IF;
      IF cardinality(dups) = 0 THEN
        RETURN QUERY SELECT r, 0::smallint, head.last_seq + k, head.last_seq + fresh, NULL::bytea
          FROM generate_series(1, fresh) AS k;
      ELSE
        -- Events appended before come back with their seq and stored body.
        RETURN QUERY SELECT r, 0::smallint, e.seq, head.last_seq + fresh, CASE WHEN x.i = ANY (dups) THEN e.body END
          FROM unnest(p_ids[lo:hi]) WITH ORDINALITY AS x(i, k),
               LATERAL (SELECT e.seq, e.body FROM events e WHERE e.session_id = sid AND e.event_id = x.i) e
         ORDER BY x.k;
      END IF;
    END IF;
  END LOOP;
  -- Other instances' watchers and relays hear of the batch with its commit: one NOTIFY per 50
  -- sessions that grew (well under Postgres's 8000-byte payload limit). Inside the transaction it
  -- holds the notify lock through the commit, but a batch is one commit for many appends.
  PERFORM pg_notify(p_channel, p_notify || string_agg(g.item, ';'))
     FROM (SELECT item, (row_number() OVER () - 1) / 50 AS chunk FROM unnest(grown) AS item) g
    GROUP BY g.chunk;
END $$;
