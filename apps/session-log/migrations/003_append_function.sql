-- The append path as one statement: mh_append writes a batch of append requests (from any
-- sessions, several of the same session allowed) in the caller's one transaction, and reports
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
-- exactly as served.
--
-- Rows returned, per request r in order:
--   outcome 0 (appended, or all duplicates): one row per event, in order: its seq, the session's
--            last seq after the request in cur, and the stored body when the event is a
--            duplicate (appended before; returned as first appended);
--   outcome 1: the session does not exist;
--   outcome 2: p_epochs[r] is stale; cur is the session's lease epoch;
--   outcome 3: p_expected[r] does not match; cur is the session's last seq;
--   outcome 4: the session is terminated.
-- A request whose events were all appended before succeeds whatever the session's state (that
-- is what makes retries safe); the checks apply only when there is something new to write.
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
  p_created_at timestamptz
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE plpgsql AS $$
DECLARE
  r int;
  lo int := 1;
  hi int;
  sid text;
  head record;
  dups text[];
  fresh int;
BEGIN
  -- Lock every session of the batch up front, in one order, so that concurrent batches (other
  -- instances) never wait on each other in a cycle.
  PERFORM 1 FROM sessions s WHERE s.session_id = ANY (p_sessions) ORDER BY s.session_id FOR UPDATE;
  FOR r IN 1 .. coalesce(array_length(p_sessions, 1), 0) LOOP
    sid := p_sessions[r];
    hi := lo + p_counts[r] - 1;
    SELECT s.last_seq, s.lease_epoch, s.status INTO head FROM sessions s WHERE s.session_id = sid;
    IF NOT FOUND THEN
      RETURN QUERY SELECT r, 1::smallint, NULL::bigint, NULL::bigint, NULL::bytea;
    ELSE
      SELECT coalesce(array_agg(e.event_id), '{}') INTO dups
        FROM events e WHERE e.session_id = sid AND e.event_id = ANY (p_ids[lo:hi]);
      fresh := p_counts[r] - cardinality(dups);
      IF fresh > 0 AND p_epochs[r] IS NOT NULL AND p_epochs[r] <> head.lease_epoch THEN
        RETURN QUERY SELECT r, 2::smallint, NULL::bigint, head.lease_epoch, NULL::bytea;
      ELSIF fresh > 0 AND p_expected[r] IS NOT NULL AND p_expected[r] <> head.last_seq THEN
        RETURN QUERY SELECT r, 3::smallint, NULL::bigint, head.last_seq, NULL::bytea;
      ELSIF fresh > 0 AND head.status = 3 THEN
        RETURN QUERY SELECT r, 4::smallint, NULL::bigint, head.last_seq, NULL::bytea;
      ELSIF cardinality(dups) = 0 THEN
        -- The common case: every event is new and takes the next seq in request order.
        WITH ins AS (
          INSERT INTO events (session_id, seq, event_id, type, created_at, body)
          SELECT sid, head.last_seq + x.k, x.i, x.t, p_created_at, x.b || '\x18'::bytea || mh_varint(head.last_seq + x.k)
            FROM unnest(p_ids[lo:hi], p_types[lo:hi], p_bodies[lo:hi]) WITH ORDINALITY AS x(i, t, b, k)
          RETURNING events.seq
        )
        INSERT INTO outbox (shard, session_id, seq) SELECT p_shards[r], sid, ins.seq FROM ins;
        UPDATE sessions s
           SET last_seq = head.last_seq + fresh,
               status = coalesce((SELECT x.st FROM unnest(p_statuses[lo:hi]) WITH ORDINALITY AS x(st, k)
                                   WHERE x.st IS NOT NULL ORDER BY x.k DESC LIMIT 1), s.status),
               awaiting_harness = coalesce((SELECT x.aw FROM unnest(p_awaiting[lo:hi]) WITH ORDINALITY AS x(aw, k)
                                             WHERE x.aw IS NOT NULL ORDER BY x.k DESC LIMIT 1), s.awaiting_harness),
               updated_at = p_created_at
         WHERE s.session_id = sid;
        RETURN QUERY SELECT r, 0::smallint, head.last_seq + k, head.last_seq + fresh, NULL::bytea
          FROM generate_series(1, fresh) AS k;
      ELSE
        -- Some (or all) events were appended before: the new ones take the next seqs in order.
        IF fresh > 0 THEN
          WITH novel AS (
            SELECT x.i, x.t, x.b, x.st, x.aw, x.k, head.last_seq + row_number() OVER (ORDER BY x.k) AS n
              FROM unnest(p_ids[lo:hi], p_types[lo:hi], p_bodies[lo:hi], p_statuses[lo:hi], p_awaiting[lo:hi])
                   WITH ORDINALITY AS x(i, t, b, st, aw, k)
             WHERE x.i <> ALL (dups)
          ), ins AS (
            INSERT INTO events (session_id, seq, event_id, type, created_at, body)
            SELECT sid, v.n, v.i, v.t, p_created_at, v.b || '\x18'::bytea || mh_varint(v.n) FROM novel v
            RETURNING events.seq
          ), queued AS (
            INSERT INTO outbox (shard, session_id, seq) SELECT p_shards[r], sid, ins.seq FROM ins
          )
          UPDATE sessions s
             SET last_seq = head.last_seq + fresh,
                 status = coalesce((SELECT v.st FROM novel v WHERE v.st IS NOT NULL ORDER BY v.k DESC LIMIT 1), s.status),
                 awaiting_harness = coalesce((SELECT v.aw FROM novel v WHERE v.aw IS NOT NULL ORDER BY v.k DESC LIMIT 1),
                                             s.awaiting_harness),
                 updated_at = p_created_at
           WHERE s.session_id = sid;
        END IF;
        RETURN QUERY SELECT r, 0::smallint, e.seq, head.last_seq + fresh,
                            CASE WHEN e.event_id = ANY (dups) THEN e.body END
          FROM unnest(p_ids[lo:hi]) WITH ORDINALITY AS x(i, k)
          JOIN events e ON e.session_id = sid AND e.event_id = x.i
         ORDER BY x.k;
      END IF;
    END IF;
    lo := hi + 1;
  END LOOP;
END $$;
