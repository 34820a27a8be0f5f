-- mh_append and mh_append_serial (005's, the 14-argument functions every append runs through,
-- mh_append_lease included) send no NOTIFY when p_channel is null. An instance of the log that is
-- alone (watch/peers.ts: no other instance said it is there within the last few seconds) passes
-- null: a NOTIFY of its own appends reached only its own listener, which skips its own payloads,
-- and cost Postgres about 0.1 ms a commit (queued under the database's notify lock, and every
-- listening backend of the database woken to read it), besides the listener's message in the
-- log. Other instances still hear every append as soon as one of them is there.
--
-- The functions are recreated from their own definitions with one change, their NOTIFY's
-- `GROUP BY g.chunk` given `HAVING p_channel IS NOT NULL` (no group, so no pg_notify call, when
-- it is null), so their bodies stay those of 005, which holds them and their comments; a
-- definition that does not end its NOTIFY that way exactly once stops the migration.
DO $$
DECLARE
  f regprocedure;
  def text;
  mark constant text := 'GROUP BY g.chunk;';
BEGIN
  FOREACH f IN ARRAY ARRAY[
    'mh_append_serial(text[], bigint[], bigint[], smallint[], int[], text[], text[], smallint[], boolean[], bytea[], timestamptz, text, text, bigint)'::regprocedure,
    'mh_append(text[], bigint[], bigint[], smallint[], int[], text[], text[], smallint[], boolean[], bytea[], timestamptz, text, text, bigint)'::regprocedure
  ] LOOP
    def := pg_get_functiondef(f);
    IF length(def) - length(replace(def, mark, '')) <> length(mark) THEN
      RAISE EXCEPTION '% does not end its NOTIFY with "%" exactly once', f, mark;
    END IF;
    EXECUTE replace(def, mark, 'GROUP BY g.chunk HAVING p_channel IS NOT NULL;');
  END LOOP;
END $$;
