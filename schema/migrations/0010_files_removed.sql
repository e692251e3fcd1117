-- 0010_files_removed.sql: retention_keep_records removes an old finished
-- job's run directory but keeps its row and events; files_removed = 1 marks
-- such a job (its downloads answer 410 Gone). The partial index lets
-- retention find the finished jobs whose files are still there, oldest
-- first, without reading those already done.
ALTER TABLE jobs ADD COLUMN files_removed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_finished_files ON jobs (finished_at)
    WHERE finished_at IS NOT NULL AND files_removed = 0;
