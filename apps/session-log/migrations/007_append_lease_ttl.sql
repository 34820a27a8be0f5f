-- mh_append_lease: mh_append (005), then, in the same transaction, the lease of each request that
-- names a TTL (p_lease_ttl_ms, null: none) and was appended (outcome 0, its events new or all in
-- the log already) set to run that long from now, as RenewLease sets it: the lease of the
-- request's epoch, while still held (a lease freed or given back keeps its epoch, and is left
-- alone; one taken over has a newer epoch). Why: a harness that keeps a session after its turn
-- (MH_IDLE_LINGER_MS) ends the turn with its lease set to run out with the linger, so a session
-- that gets no more input needs neither a renewal nor a ReleaseLease. Calls the per-request
-- function itself for a one-request batch, as mh_append does; the 14-argument functions are
-- untouched.
CREATE FUNCTION mh_append_lease(
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
) RETURNS TABLE (req int, outcome smallint, seq bigint, cur bigint, body bytea)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  r record;
  done int[] := '{}';
BEGIN
  FOR r IN
    SELECT a.* FROM mh_append_serial(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses,
                                     p_awaiting, p_bodies, p_created_at, p_channel, p_notify, p_echo_limit) AS a
     WHERE cardinality(p_sessions) = 1
    UNION ALL
    SELECT a.* FROM mh_append(p_sessions, p_expected, p_epochs, p_shards, p_counts, p_ids, p_types, p_statuses,
                              p_awaiting, p_bodies, p_created_at, p_channel, p_notify, p_echo_limit) AS a
     WHERE cardinality(p_sessions) > 1
  LOOP
    IF r.outcome = 0 AND p_lease_ttl_ms[r.req] IS NOT NULL AND NOT r.req = ANY (done) THEN
      done := done || r.req;
    END IF;
    req := r.req; outcome := r.outcome; seq := r.seq; cur := r.cur; body := r.body;
    RETURN NEXT;
  END LOOP;
  IF cardinality(done) > 0 THEN
    -- The rows are locked already (mh_append took them FOR UPDATE).
    UPDATE sessions s SET lease_expires_at = now() + make_interval(secs => u.ttl::double precision / 1000)
      FROM unnest(p_sessions, p_epochs, p_lease_ttl_ms) WITH ORDINALITY AS u(sid, epoch, ttl, o)
     WHERE u.o = ANY (done) AND s.session_id = u.sid AND s.lease_epoch = u.epoch AND s.lease_holder IS NOT NULL;
  END IF;
END $$;
