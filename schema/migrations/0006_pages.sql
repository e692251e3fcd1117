-- 0006_pages.sql: paginated job lists whose cost does not grow with the store.
-- `jobs_submitted` turns a list's `since` (a submission time) into a range
-- of seq: submission times are stamped inside the submit transaction, so
-- they follow seq. `jobs_finished` lets retention find finished jobs older
-- than its horizon without reading the jobs that are not.
CREATE INDEX jobs_submitted ON jobs (submitted_at);

-- The run-order index also carries the owner, so a scheduling pass that
-- leaves out the jobs of users at their running limit reads the owner from
-- the index and fetches only the rows it keeps (with 19,000 queued jobs of
-- users all at their limit, a pass took 11 ms reading every row).
DROP INDEX jobs_run_order;
CREATE INDEX jobs_run_order ON jobs (state, priority DESC, vstart, seq, owner);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- 'queue_gen' changes with every change to the queue's run order (a job
-- entering or leaving the queue, or a queued job's priority or start tag
-- changing), so a reader that computed every queued job's place once can
-- tell, in the same read transaction, whether that answer still holds.
INSERT INTO meta (key, value) VALUES ('queue_gen', 0);

CREATE TRIGGER jobs_queue_gen_insert AFTER INSERT ON jobs WHEN new.state = 'queued'
BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'queue_gen';
END;

CREATE TRIGGER jobs_queue_gen_update AFTER UPDATE OF state, priority, vstart ON jobs
    WHEN old.state = 'queued' OR new.state = 'queued'
BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'queue_gen';
END;

CREATE TRIGGER jobs_queue_gen_delete AFTER DELETE ON jobs WHEN old.state = 'queued'
BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'queue_gen';
END;
