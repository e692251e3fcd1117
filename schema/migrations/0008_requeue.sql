-- 0008_requeue.sql: a job may go back to the queue (Slurm requeued it, or a
-- user resumed it): keep meta's count of queued jobs right when a row
-- enters 'queued' by an UPDATE, as 0002's triggers do for the other ways.
CREATE TRIGGER IF NOT EXISTS jobs_queued_enter AFTER UPDATE OF state ON jobs
    WHEN old.state != 'queued' AND new.state = 'queued'
BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'queued';
END;
