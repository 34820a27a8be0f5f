-- A tool call runs at most once per session, not once per sandbox: two harnesses racing for one
-- session (one of them late, its lease already taken over) could each provision a sandbox and run
-- the same tool_use there, and a ledger keyed by (sandbox_id, call_id) let both run. Keyed by
-- (session_id, call_id), the second finds the first's claim whichever sandbox it names.
-- And a key per ready sandbox of a session (ProvisionRequest.key), so racing Provisions of the
-- session's default sandbox end in one sandbox. Applied once, in a transaction.

-- A call that ran twice before this (the race above) keeps its first row.
DELETE FROM sandbox_calls c USING sandbox_calls d
 WHERE c.session_id = d.session_id AND c.call_id = d.call_id
   AND (c.started_at, c.sandbox_id) > (d.started_at, d.sandbox_id);

ALTER TABLE sandbox_calls DROP CONSTRAINT sandbox_calls_pkey;
ALTER TABLE sandbox_calls ADD PRIMARY KEY (session_id, call_id);
-- The sandbox's calls (its delete cascades; a restart settles its running ones).
CREATE INDEX sandbox_calls_by_sandbox ON sandbox_calls (sandbox_id);

-- ProvisionRequest.key: empty for none.
ALTER TABLE sandboxes ADD COLUMN provision_key text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX sandboxes_ready_by_key ON sandboxes (session_id, provision_key) WHERE state = 1 AND provision_key <> '';
