-- A holder's leases found by its name: when its line to the log ends (HoldLeases, its process
-- died), every lease it holds is freed in one statement, which must not scan the whole table.
CREATE INDEX sessions_by_lease_holder ON sessions (lease_holder) WHERE lease_holder IS NOT NULL;
