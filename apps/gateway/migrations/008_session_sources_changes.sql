-- What a new session is made of changed (sessions/sources.ts: an agent, its versions, an
-- environment): every gateway instance hears it on this channel and forgets the agents and
-- environments it kept for sessions.create. Per statement and without a payload: such changes
-- are rare, and each drops every copy. Inserts need none: only what exists is kept, and a new
-- agent's or version's row changes no existing one (a new version moves gw_agents.version). A
-- trigger, so no writer (a cascade included) changes them unheard.
CREATE FUNCTION gw_session_sources_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mh_gw_session_sources', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER gw_agents_sources_changed
  AFTER UPDATE OR DELETE OR TRUNCATE ON gw_agents
  FOR EACH STATEMENT EXECUTE FUNCTION gw_session_sources_changed();

CREATE TRIGGER gw_agent_versions_sources_changed
  AFTER UPDATE OR DELETE OR TRUNCATE ON gw_agent_versions
  FOR EACH STATEMENT EXECUTE FUNCTION gw_session_sources_changed();

CREATE TRIGGER gw_environments_sources_changed
  AFTER UPDATE OR DELETE OR TRUNCATE ON gw_environments
  FOR EACH STATEMENT EXECUTE FUNCTION gw_session_sources_changed();
