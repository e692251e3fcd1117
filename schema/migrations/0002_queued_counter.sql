-- 0002_queued_counter.sql: keep the number of queued jobs in meta, so a
-- queue position can be computed from whichever end of the queue is nearer
-- (SQLite has no order-statistics index: COUNT walks every counted row),
-- and replace the partial queue index by a full one that covers the
-- position counts (a partial index still made SQLite read every table row).
DROP INDEX jobs_queue;
CREATE INDEX jobs_run_order ON jobs (state, priority DESC, vstart, seq);

INSERT INTO meta (key, value) VALUES ('queued', (SELECT COUNT(*) FROM jobs WHERE state = 'queued'));

CREATE TRIGGER jobs_queued_insert AFTER INSERT ON jobs WHEN new.state = 'queued'
BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'queued';
END;

CREATE TRIGGER jobs_queued_leave AFTER UPDATE OF state ON jobs
    WHEN old.state = 'queued' AND new.state != 'queued'
BEGIN
    UPDATE meta SET value = value - 1 WHERE key = 'queued';
END;

CREATE TRIGGER jobs_queued_delete AFTER DELETE ON jobs WHEN old.state = 'queued'
BEGIN
    UPDATE meta SET value = value - 1 WHERE key = 'queued';
END;
