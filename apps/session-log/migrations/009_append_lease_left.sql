-- An append's answer says how long the session's lease has left once the append is in the log
-- (lease_ms: null when no lease is held, or it has run out), read under the row lock the append
-- takes anyway: no statement more. Why: the gateway wakes a harness after every input it
-- appends, and while a harness drives the session or lingers on it after its turn (following the
-- log, which brings it the input) that Wake only answered "already running"; with the lease's
-- time left the gateway skips it (apps/gateway/src/sessions/append.ts says when and why that is
-- safe). The ms are counted on the database's clock (clock_timestamp()), as leases expire.
--
-- The functions of 005 (with 008's quiet NOTIFY) and 007 cannot change what they return, so
-- their successors take new names: mh_append_serial_v2 and mh_append_v2 (005's bodies, with the
-- lease read with the session's row and a lease_ms column on every row: a request's ms on its
-- rows when appended, null on a refused one's) and mh_append_lease_v2 (007's, which answers for a
-- request whose lease it set the time it set). The previous release's functions (14 and 15
-- arguments, five columns) stay for instances still running while this one rolls out, as
-- wrappers of these: one implementation of each is left in the database. 005's comments hold the
-- contract of the rest.

CREATE FUNCTION mh_append_serial_v2(
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
    SELECT s.last_seq, s.lease_epoch, s.status, s.lease_holder, s.lease_expires_at INTO head FROM sessions s WHERE s.session_id = sid FOR UPDATE;
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
CREATE FUNCTION mh_append_v2(
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
           s.lease_holder, s.lease_expires_at
      FROM unnest(p_sessions, p_counts, p_epochs, p_expected) WITH ORDINALITY AS u(s, c, e, x, o)
      LEFT JOIN LATERAL (SELECT true AS known, s.last_seq, s.lease_epoch, s.status, s.awaiting_harness, s.lease_holder, s.lease_expires_at
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

CREATE FUNCTION mh_append_lease_v2(
  p_sessions     text[],
  p_expected     bigint[],
  p_epochs       bigint[],
  p_shards       smallint[],
  p_counts       int[],
  p_ids          text[],
  p_types        text[],
  p_statuses     smallint[],
  p_awaiting     boolean[],
  p_bodies       bytea[],
  p_created_at   timestamptz,
  p_channel      text,
  p_notify       text,
  p_echo_limit   bigint,
  p_lease_ttl_ms int[]
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea, lease_ms bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  a_req int[];
  a_outcome smallint[];
  a_seq bigint[];
  a_cur bigint[];
  a_body bytea[];
  a_lease bigint[];
  -- The requests whose lease this call set, and until when.
  set_req bigint[];
  set_until timestamptz[];
BEGIN
  SELECT array_agg(a.req ORDER BY a.k), array_agg(a.outcome ORDER BY a.k), array_agg(a.seq ORDER BY a.k),
         array_agg(a.cur ORDER BY a.k), array_agg(a.body ORDER BY a.k), array_agg(a.lease_ms ORDER BY a.k)
    INTO a_req, a_outcome, a_seq, a_cur, a_body, a_lease
    FROM (SELECT s.* FROM mh_append_serial_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses,
                                              p_awaiting, p_bodies, p_created_at, p_channel, p_notify, p_echo_limit)
                          WITH ORDINALITY AS s(req, outcome, seq, cur, body, lease_ms, k)
           WHERE cardinality(p_sessions) = 1
          UNION ALL
          SELECT b.* FROM mh_append_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses,
                                       p_awaiting, p_bodies, p_created_at, p_channel, p_notify, p_echo_limit)
                          WITH ORDINALITY AS b(req, outcome, seq, cur, body, lease_ms, k)
           WHERE cardinality(p_sessions) > 1) a;
  -- As 007: the lease of each appended request naming a TTL, of its epoch, while still held (the
  -- rows are locked already: the append took them FOR UPDATE).
  WITH done AS (SELECT DISTINCT x.r FROM unnest(a_req, a_outcome) AS x(r, oc) WHERE x.oc = 0 AND p_lease_ttl_ms[x.r] IS NOT NULL),
       upd AS (UPDATE sessions s SET lease_expires_at = now() + make_interval(secs => u.ttl::double precision / 1000)
                 FROM unnest(p_sessions, p_epochs, p_lease_ttl_ms) WITH ORDINALITY AS u(sid, epoch, ttl, o)
                WHERE u.o IN (SELECT r FROM done) AND s.session_id = u.sid AND s.lease_epoch = u.epoch AND s.lease_holder IS NOT NULL
               RETURNING u.o, s.lease_expires_at)
  SELECT array_agg(upd.o), array_agg(upd.lease_expires_at) INTO set_req, set_until FROM upd;
  RETURN QUERY
  SELECT x.r, x.oc, x.sq, x.cu, x.bo,
         CASE WHEN t.until IS NULL THEN x.le
              ELSE greatest(floor(extract(epoch FROM t.until - clock_timestamp()) * 1000), 0)::bigint END
    FROM unnest(a_req, a_outcome, a_seq, a_cur, a_body, a_lease) WITH ORDINALITY AS x(r, oc, sq, cu, bo, le, k)
    LEFT JOIN unnest(set_req, set_until) AS t(o, until) ON t.o = x.r
   ORDER BY x.k;
END $$;

-- The previous release's functions, as wrappers of these (five columns, rows in the same order).
CREATE OR REPLACE FUNCTION mh_append_serial(
  p_sessions text[], p_expected bigint[], p_epochs bigint[], p_shards smallint[], p_counts int[], p_ids text[],
  p_types text[], p_statuses smallint[], p_awaiting boolean[], p_bodies bytea[], p_created_at timestamptz,
  p_channel text, p_notify text, p_echo_limit bigint
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE sql
AS $$
  SELECT a.req, a.outcome, a.seq, a.cur, a.body
    FROM mh_append_serial_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses, p_awaiting,
                             p_bodies, p_created_at, p_channel, p_notify, p_echo_limit) AS a
$$;

CREATE OR REPLACE FUNCTION mh_append(
  p_sessions text[], p_expected bigint[], p_epochs bigint[], p_shards smallint[], p_counts int[], p_ids text[],
  p_types text[], p_statuses smallint[], p_awaiting boolean[], p_bodies bytea[], p_created_at timestamptz,
  p_channel text, p_notify text, p_echo_limit bigint
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE sql
AS $$
  SELECT a.req, a.outcome, a.seq, a.cur, a.body
    FROM mh_append_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses, p_awaiting,
                      p_bodies, p_created_at, p_channel, p_notify, p_echo_limit) AS a
$$;

CREATE OR REPLACE FUNCTION mh_append_lease(
  p_sessions text[], p_expected bigint[], p_epochs bigint[], p_shards smallint[], p_counts int[], p_ids text[],
  p_types text[], p_statuses smallint[], p_awaiting boolean[], p_bodies bytea[], p_created_at timestamptz,
  p_channel text, p_notify text, p_echo_limit bigint, p_lease_ttl_ms int[]
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE sql
AS $$
  SELECT a.req, a.outcome, a.seq, a.cur, a.body
    FROM mh_append_lease_v2(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses, p_awaiting,
                            p_bodies, p_created_at, p_channel, p_notify, p_echo_limit, p_lease_ttl_ms) AS a
$$;
