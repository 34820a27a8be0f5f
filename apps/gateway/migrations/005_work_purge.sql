-- Stopped work items are deleted some time after they stopped (src/work/purge.ts): this index
-- finds them without reading the live queue.
CREATE INDEX gw_work_stopped ON gw_work (stopped_at) WHERE state = 'stopped';
