-- A session's spend ceiling (BetaManagedAgentsBudgetLimit, null: uncapped) and the list cost of
-- its usage in cents, folded from the harness's session.usage events (null until the first).
ALTER TABLE gw_sessions ADD COLUMN budget jsonb;
ALTER TABLE gw_sessions ADD COLUMN list_cost_cents bigint;
