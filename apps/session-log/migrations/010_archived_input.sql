-- An archived session takes no more input: an append of a user.* event or a system.message
-- without a lease epoch (a client's, through any gateway instance) is refused with outcome 6,
-- under the row lock the append takes anyway, so that a send another gateway instance checked
-- before the archive committed cannot land after it (the gateway's archive sets the flag here,
-- through UpdateSession, before its own row). What carries a lease epoch (the harness finishing
-- a turn under way), events that are not input (the broker's) and an append that terminates the
-- session (a delete's interrupt and termination) still land.
-- mh_append_serial_v2 and mh_append_v2 are 009's with that check; their signatures are kept, so
-- mh_append_lease_v2 and the previous release's wrappers call them as they did.

ALTER TABLE sessions ADD COLUMN archived boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION mh_append_serial_v2(
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
  p_notify     text,
  p_echo_limit bigint
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea, lease_ms bigint)
LANGUAGE plpgsql
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
  over int;
  grown text[] := '{}';
  left_ms bigint;
BEGIN
  SELECT array_agg(x.start ORDER BY x.o) INTO starts
    FROM (SELECT o, sum(c) OVER (ORDER BY o) - c + 1 AS start FROM unnest(p_counts) WITH ORDINALITY AS u(c, o)) x;
  FOR r IN SELECT u.o FROM unnest(p_sessions) WITH ORDINALITY AS u(s, o) ORDER BY u.s, u.o LOOP
    sid := p_sessions[r];
    lo := starts[r];
    hi := lo + p_counts[r] - 1;
    SELECT s.last_seq, s.lease_epoch, s.status, s.lease_holder, s.lease_expires_at, s.archived INTO head FROM sessions s WHERE s.session_id = sid FOR UPDATE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT r, 1::smallint, NULL::bigint, NULL::bigint, NULL::bytea, NULL::bigint;
      CONTINUE;
    END IF;
    SELECT coalesce(array_agg(x.i) FILTER (WHERE (SELECT true FROM events e WHERE e.session_id = sid AND e.event_id = x.i)), '{}')
      INTO dups FROM unnest(p_ids[lo:hi]) AS x(i);
    fresh := p_counts[r] - cardinality(dups);
    over := NULL;
    IF cardinality(dups) > 0 AND p_echo_limit IS NOT NULL THEN
      -- What the answer would echo, in request order: the repeated events as stored (their
      -- length is in the toast header: no body is read), the new ones as sent plus their seq
      -- (field 3: a tag and at most ten bytes of varint). The first event past the limit.
      SELECT min(y.k) INTO over
        FROM (SELECT x.k, sum(coalesce(s.len, octet_length(x.b) + 11)) OVER (ORDER BY x.k) AS run
                FROM unnest(p_ids[lo:hi], p_bodies[lo:hi]) WITH ORDINALITY AS x(i, b, k)
                LEFT JOIN LATERAL (SELECT octet_length(e.body) AS len FROM events e
                                    WHERE x.i = ANY (dups) AND e.session_id = sid AND e.event_id = x.i) s ON true) y
       WHERE y.run > p_echo_limit;
    END IF;
    IF fresh > 0 AND p_epochs[r] IS NOT NULL AND p_epochs[r] <> head.lease_epoch THEN
      RETURN QUERY SELECT r, 2::smallint, NULL::bigint, head.lease_epoch, NULL::bytea, NULL::bigint;
    ELSIF fresh > 0 AND p_expected[r] IS NOT NULL AND p_expected[r] <> head.last_seq THEN
      RETURN QUERY SELECT r, 3::smallint, NULL::bigint, head.last_seq, NULL::bytea, NULL::bigint;
    ELSIF fresh > 0 AND head.status = 3 THEN
      RETURN QUERY SELECT r, 4::smallint, NULL::bigint, head.last_seq, NULL::bytea, NULL::bigint;
    ELSIF fresh > 0 AND head.archived AND p_epochs[r] IS NULL
          AND (SELECT bool_or(t.t LIKE 'user.%' OR t.t = 'system.message') AND NOT bool_or(t.t = 'session.status_terminated')
                 FROM unnest(p_types[lo:hi]) AS t(t)) THEN
      RETURN QUERY SELECT r, 6::smallint, NULL::bigint, head.last_seq, NULL::bytea, NULL::bigint;
    ELSIF over IS NOT NULL THEN
      RETURN QUERY SELECT r, 5::smallint, NULL::bigint, over::bigint, NULL::bytea, NULL::bigint;
    ELSE
      IF fresh > 0 THEN
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
      -- The lease as the append leaves it (it sets none), read under the row's lock: ms left now.
      left_ms := CASE WHEN head.lease_holder IS NOT NULL AND head.lease_expires_at > clock_timestamp()
                      THEN floor(extract(epoch FROM head.lease_expires_at - clock_timestamp()) * 1000)::bigint END;
      IF cardinality(dups) = 0 THEN
        RETURN QUERY SELECT r, 0::smallint, head.last_seq + k, head.last_seq + fresh, NULL::bytea, left_ms
          FROM generate_series(1, fresh) AS k;
      ELSE
        RETURN QUERY SELECT r, 0::smallint, e.seq, head.last_seq + fresh, CASE WHEN x.i = ANY (dups) THEN e.body END, left_ms
          FROM unnest(p_ids[lo:hi]) WITH ORDINALITY AS x(i, k),
               LATERAL (SELECT e.seq, e.body FROM events e WHERE e.session_id = sid AND e.event_id = x.i) e
         ORDER BY x.k;
      END IF;
    END IF;
  END LOOP;
  PERFORM pg_notify(p_channel, p_notify || string_agg(g.item, ';'))
     FROM (SELECT item, (row_number() OVER () - 1) / 50 AS chunk FROM unnest(grown) AS item) g
    GROUP BY g.chunk HAVING p_channel IS NOT NULL;
END $$;
CREATE OR REPLACE FUNCTION mh_append_v2(
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
  p_notify     text,
  p_echo_limit bigint
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea, lease_ms bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  n int := cardinality(p_sessions);
  repeated boolean;
  closed boolean;
  rec record;
  e_req int[];
  e_sid text[];
  e_k int[];
  q_outcome smallint[] := array_fill(0::smallint, ARRAY[n]);
  q_head bigint[] := array_fill(0::bigint, ARRAY[n]);
  q_cur bigint[] := array_fill(0::bigint, ARRAY[n]);
  q_lease bigint[] := array_fill(NULL::bigint, ARRAY[n]);
  sid text;
  s_last bigint;
  s_epoch bigint;
  s_status smallint;
  s_await boolean;
  s_grew boolean := false;
  g_sid text[] := '{}';
  g_last bigint[] := '{}';
  g_status smallint[] := '{}';
  g_await boolean[] := '{}';
BEGIN
  IF n = 1 THEN
    RETURN QUERY SELECT * FROM mh_append_serial_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types,
                                                p_statuses, p_awaiting, p_bodies, p_created_at, p_channel, p_notify,
                                                p_echo_limit);
    RETURN;
  END IF;

  PERFORM FROM sessions s WHERE s.session_id = ANY (p_sessions) ORDER BY s.session_id FOR UPDATE;

  SELECT array_agg(u.o::int ORDER BY u.o, g), array_agg(u.s ORDER BY u.o, g), array_agg(g ORDER BY u.o, g)
    INTO e_req, e_sid, e_k
    FROM unnest(p_sessions, p_counts) WITH ORDINALITY AS u(s, c, o), generate_series(1, u.c) AS g;

  -- A batch with a repeated event goes to the per-request loop, which alone echoes (and so
  -- checks the echo limit): this path writes new events only.
  SELECT EXISTS (SELECT FROM unnest(e_sid, p_ids) AS x(s, id),
                             LATERAL (SELECT FROM events e WHERE e.session_id = x.s AND e.event_id = x.id LIMIT 1) e)
      OR EXISTS (SELECT FROM unnest(e_sid, p_ids) AS x(s, id) GROUP BY x.s, x.id HAVING count(*) > 1)
    INTO repeated;
  IF repeated THEN
    RETURN QUERY SELECT * FROM mh_append_serial_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types,
                                                p_statuses, p_awaiting, p_bodies, p_created_at, p_channel, p_notify,
                                                p_echo_limit);
    RETURN;
  END IF;

  FOR rec IN
    SELECT u.o::int AS r, u.s, u.c, u.e, u.x, s.known, s.last_seq, s.lease_epoch, s.status, s.awaiting_harness, l.st, l.aw,
           s.lease_holder, s.lease_expires_at, s.archived
      FROM unnest(p_sessions, p_counts, p_epochs, p_expected) WITH ORDINALITY AS u(s, c, e, x, o)
      LEFT JOIN LATERAL (SELECT true AS known, s.last_seq, s.lease_epoch, s.status, s.awaiting_harness, s.lease_holder, s.lease_expires_at,
                                s.archived
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
    -- Input (user.*, system.message) without a lease epoch to an archived session, unless the
    -- append terminates it: looked for only in an archived session's requests.
    closed := false;
    IF rec.archived AND rec.e IS NULL AND rec.c > 0 THEN
      SELECT coalesce(bool_or(y.t LIKE 'user.%' OR y.t = 'system.message') AND NOT bool_or(y.t = 'session.status_terminated'), false)
        INTO closed FROM unnest(e_req, p_types) AS y(r, t) WHERE y.r = rec.r;
    END IF;
    IF rec.known IS NULL THEN
      q_outcome[rec.r] := 1;
    ELSIF rec.c > 0 AND rec.e IS NOT NULL AND rec.e <> s_epoch THEN
      q_outcome[rec.r] := 2; q_cur[rec.r] := s_epoch;
    ELSIF rec.c > 0 AND rec.x IS NOT NULL AND rec.x <> s_last THEN
      q_outcome[rec.r] := 3; q_cur[rec.r] := s_last;
    ELSIF rec.c > 0 AND s_status = 3 THEN
      q_outcome[rec.r] := 4; q_cur[rec.r] := s_last;
    ELSIF closed THEN
      q_outcome[rec.r] := 6; q_cur[rec.r] := s_last;
    ELSIF rec.c > 0 THEN
      q_head[rec.r] := s_last;
      s_last := s_last + rec.c;
      q_cur[rec.r] := s_last;
      s_status := coalesce(rec.st, s_status);
      s_await := coalesce(rec.aw, s_await);
      s_grew := true;
      -- The lease as the append leaves it (it sets none; the rows are locked): ms left now.
      q_lease[rec.r] := CASE WHEN rec.lease_holder IS NOT NULL AND rec.lease_expires_at > clock_timestamp()
                             THEN floor(extract(epoch FROM rec.lease_expires_at - clock_timestamp()) * 1000)::bigint END;
    END IF;
  END LOOP;
  IF s_grew THEN
    g_sid := g_sid || sid; g_last := g_last || s_last; g_status := g_status || s_status; g_await := g_await || s_await;
  END IF;

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
  SELECT x.r, 0::smallint, q_head[x.r] + x.k, q_cur[x.r], NULL::bytea, q_lease[x.r]
    FROM unnest(e_req, e_k) AS x(r, k)
   WHERE q_outcome[x.r] = 0
  UNION ALL
  SELECT u.r::int, u.oc, NULL::bigint, CASE WHEN u.oc <> 1 THEN u.cur END, NULL::bytea, NULL::bigint
    FROM unnest(q_outcome, q_cur) WITH ORDINALITY AS u(oc, cur, r)
   WHERE u.oc <> 0;

  PERFORM pg_notify(p_channel, p_notify || string_agg(g.item, ';'))
     FROM (SELECT x.s || ':' || x.l AS item, (row_number() OVER () - 1) / 50 AS chunk
             FROM unnest(g_sid, g_last) AS x(s, l)) g
    GROUP BY g.chunk HAVING p_channel IS NOT NULL;
END $$;
