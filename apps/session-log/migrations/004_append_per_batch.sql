-- mh_append with statements per batch instead of per request: same signature, outcomes and rows
-- as 003 (whose comments hold the contract), except that rows of different requests may come in
-- another order (store/append.ts groups them by request). 003's loop runs five statements for
-- every request of a batch, at 40-60 µs each on a 2-core VM: 16 sessions appending one event
-- each at once cost Postgres about three times what one request of 16 events does. Here a batch
-- without retries (the common case) runs six statements whatever its size: lock its sessions,
-- spread the requests over their events, look for events appended before, read every request's
-- session and what its events set, write all events, outbox rows and session heads in one
-- statement that also returns the rows, and NOTIFY. Per request there is only plpgsql
-- arithmetic, and per event only set-based SQL, as in 003.
--
-- 003's function stays, renamed mh_append_serial, for two kinds of batches: one holding an event
-- appended before (a retry), or one event id twice for one session (a retry racing its
-- original), which is rare and needs its per-request loop, where each request sees the writes of
-- the one before; and a batch of one request, where that loop runs once and its plainer
-- statements cost less than these (store/append.ts calls it directly then).
ALTER FUNCTION mh_append(text[], bigint[], bigint[], smallint[], int[], text[], text[], smallint[], boolean[],
                         bytea[], timestamptz, text, text)
  RENAME TO mh_append_serial;

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
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  n int := cardinality(p_sessions);
  repeated boolean;
  rec record;
  -- Per event, beside the event arrays: its request, its session, its place in the request.
  e_req int[];
  e_sid text[];
  e_k int[];
  -- Per request: its outcome (003's codes), the seq before its first event, and cur (0 where
  -- 003 returns null: outcome 1).
  q_outcome smallint[] := array_fill(0::smallint, ARRAY[n]);
  q_head bigint[] := array_fill(0::bigint, ARRAY[n]);
  q_cur bigint[] := array_fill(0::bigint, ARRAY[n]);
  -- The session the loop is in, as the requests before advanced it.
  sid text;
  s_last bigint;
  s_epoch bigint;
  s_status smallint;
  s_await boolean;
  s_grew boolean := false;
  -- Sessions that grew: their new heads, for the UPDATE and the NOTIFY.
  g_sid text[] := '{}';
  g_last bigint[] := '{}';
  g_status smallint[] := '{}';
  g_await boolean[] := '{}';
BEGIN
  -- One request: 003's loop runs once, and its plainer statements cost less than these.
  IF n = 1 THEN
    RETURN QUERY SELECT * FROM mh_append_serial(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types,
                                                p_statuses, p_awaiting, p_bodies, p_created_at, p_channel, p_notify);
    RETURN;
  END IF;

  -- Every session of the batch locked in session order, as 003 takes them, so batches of any
  -- instance running either function never deadlock.
  PERFORM FROM sessions s WHERE s.session_id = ANY (p_sessions) ORDER BY s.session_id FOR UPDATE;

  SELECT array_agg(u.o::int ORDER BY u.o, g), array_agg(u.s ORDER BY u.o, g), array_agg(g ORDER BY u.o, g)
    INTO e_req, e_sid, e_k
    FROM unnest(p_sessions, p_counts) WITH ORDINALITY AS u(s, c, o), generate_series(1, u.c) AS g;

  -- Under the locks (no other batch can append these ids meanwhile): is an event of the batch
  -- in the log already, or twice in the batch? LATERAL ... LIMIT keeps each lookup an index
  -- probe whatever the planner thinks of the events table.
  SELECT EXISTS (SELECT FROM unnest(e_sid, p_ids) AS x(s, id),
                             LATERAL (SELECT FROM events e WHERE e.session_id = x.s AND e.event_id = x.id LIMIT 1) e)
      OR EXISTS (SELECT FROM unnest(e_sid, p_ids) AS x(s, id) GROUP BY x.s, x.id HAVING count(*) > 1)
    INTO repeated;
  IF repeated THEN
    RETURN QUERY SELECT * FROM mh_append_serial(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types,
                                                p_statuses, p_awaiting, p_bodies, p_created_at, p_channel, p_notify);
    RETURN;
  END IF;

  -- Requests in session order (arrival order within a session), each with its session's row
  -- and the status and awaiting_harness its last events set (null: unchanged).
  FOR rec IN
    SELECT u.o::int AS r, u.s, u.c, u.e, u.x, s.known, s.last_seq, s.lease_epoch, s.status, s.awaiting_harness, l.st, l.aw
      FROM unnest(p_sessions, p_counts, p_epochs, p_expected) WITH ORDINALITY AS u(s, c, e, x, o)
      LEFT JOIN LATERAL (SELECT true AS known, s.last_seq, s.lease_epoch, s.status, s.awaiting_harness
                           FROM sessions s WHERE s.session_id = u.s) s ON true
      LEFT JOIN (SELECT x.r,
                        (array_agg(x.st ORDER BY x.i DESC) FILTER (WHERE x.st IS NOT NULL))[1] AS st,
                        (array_agg(x.aw ORDER BY x.i DESC) FILTER (WHERE x.aw IS NOT NULL))[1] AS aw
                   FROM unnest(e_req, p_statuses, p_awaiting) WITH ORDINALITY AS x(r, st, aw, i)
                  WHERE x.st IS NOT NULL OR x.aw IS NOT NULL
                  GROUP BY x.r) l ON l.r = u.o
     ORDER BY u.s, u.o
  LOOP
    IF rec.s IS DISTINCT FROM sid THEN
      IF s_grew THEN
        g_sid := g_sid || sid; g_last := g_last || s_last; g_status := g_status || s_status; g_await := g_await || s_await;
      END IF;
      sid := rec.s; s_last := rec.last_seq; s_epoch := rec.lease_epoch; s_status := rec.status; s_await := rec.awaiting_harness;
      s_grew := false;
    END IF;
    IF rec.known IS NULL THEN
      q_outcome[rec.r] := 1;
    ELSIF rec.c > 0 AND rec.e IS NOT NULL AND rec.e <> s_epoch THEN
      q_outcome[rec.r] := 2; q_cur[rec.r] := s_epoch;
    ELSIF rec.c > 0 AND rec.x IS NOT NULL AND rec.x <> s_last THEN
      q_outcome[rec.r] := 3; q_cur[rec.r] := s_last;
    ELSIF rec.c > 0 AND s_status = 3 THEN
      q_outcome[rec.r] := 4; q_cur[rec.r] := s_last;
    ELSIF rec.c > 0 THEN
      q_head[rec.r] := s_last;
      s_last := s_last + rec.c;
      q_cur[rec.r] := s_last;
      s_status := coalesce(rec.st, s_status);
      s_await := coalesce(rec.aw, s_await);
      s_grew := true;
    END IF;
  END LOOP;
  IF s_grew THEN
    g_sid := g_sid || sid; g_last := g_last || s_last; g_status := g_status || s_status; g_await := g_await || s_await;
  END IF;

  -- Every new event takes its request's head plus its place in the request. Outbox ids (the
  -- relay's order) follow session order, then seq, as in 003. The rows come back in event
  -- order within each request, as the scans of the arrays read them.
  RETURN QUERY
  WITH new AS (
    SELECT x.s, q_head[x.r] + x.k AS seq, p_shards[x.r] AS sh, x.id, x.t, x.b
      FROM unnest(e_req, e_sid, e_k, p_ids, p_types, p_bodies) AS x(r, s, k, id, t, b)
     WHERE q_outcome[x.r] = 0
  ), ins AS (
    INSERT INTO events (session_id, seq, event_id, type, created_at, body)
    SELECT new.s, new.seq, new.id, new.t, p_created_at, new.b || '\x18'::bytea || mh_varint(new.seq) FROM new
  ), box AS (
    INSERT INTO outbox (shard, session_id, seq) SELECT new.sh, new.s, new.seq FROM new ORDER BY new.s, new.seq
  ), heads AS (
    UPDATE sessions s
       SET last_seq = g.l, status = g.st, awaiting_harness = g.aw, updated_at = p_created_at
      FROM unnest(g_sid, g_last, g_status, g_await) AS g(sid, l, st, aw)
     WHERE s.session_id = g.sid
  )
  SELECT x.r, 0::smallint, q_head[x.r] + x.k, q_cur[x.r], NULL::bytea
    FROM unnest(e_req, e_k) AS x(r, k)
   WHERE q_outcome[x.r] = 0
  UNION ALL
  SELECT u.r::int, u.oc, NULL::bigint, CASE WHEN u.oc <> 1 THEN u.cur END, NULL::bytea
    FROM unnest(q_outcome, q_cur) WITH ORDINALITY AS u(oc, cur, r)
   WHERE u.oc <> 0;

  -- As 003: one NOTIFY per 50 sessions that grew, sent with the commit.
  PERFORM pg_notify(p_channel, p_notify || string_agg(g.item, ';'))
     FROM (SELECT x.s || ':' || x.l AS item, (row_number() OVER () - 1) / 50 AS chunk
             FROM unnest(g_sid, g_last) AS x(s, l)) g
    GROUP BY g.chunk;
END $$;
