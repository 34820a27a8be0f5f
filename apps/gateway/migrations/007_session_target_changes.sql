-- A session's target fields (what sessions/target-cache.ts keeps: its environment, metadata and
-- archival) changed or the session is gone: every gateway instance hears it on this channel and
-- forgets its copy. A trigger, so no writer (a cascade included) can change them unheard.
CREATE FUNCTION gw_session_target_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mh_gw_session_target', OLD.session_id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER gw_session_target_changed
  AFTER UPDATE OF session_id, tenant, environment_id, environment_type, metadata, archived_at OR DELETE ON gw_sessions
  FOR EACH ROW EXECUTE FUNCTION gw_session_target_changed();
