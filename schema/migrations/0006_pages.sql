-- 0006_pages.sql: paginated job lists whose cost does not grow with the store.
-- `jobs_submitted` turns a list's `since` (a submission time) into a range
-- of seq: submission times are stamped inside the submit transaction, so
-- they follow seq. `jobs_finished` lets retention find finished jobs older
-- than its horizon without reading the jobs that are not.
CREATE INDEX jobs_submitted ON jobs (submitted_at);
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
