-- Cloud environments used to be stored with `unrestricted` networking (the old default), which the
-- sandbox broker never gave: its sandboxes have no network but an egress allowlist. The gateway
-- now refuses `unrestricted`; the environments stored with it ran without network all along, and
-- are recorded as what they got: `limited` networking with no hosts.
UPDATE gw_environments
SET body = jsonb_set(
  body,
  '{config,networking}',
  '{"type": "limited", "allowed_hosts": [], "allow_mcp_servers": false, "allow_package_managers": false}'::jsonb
)
WHERE body -> 'config' ->> 'type' = 'cloud'
  AND body -> 'config' -> 'networking' ->> 'type' = 'unrestricted';
