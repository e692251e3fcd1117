-- 0011_final_bytes.sql: the disk a finished job's run directory occupies,
-- measured once after it ended (quota.c), so a user's disk use costs a
-- walk of their running jobs only, not of their whole history.
-- final_bytes_at is the finished_at it was measured for: a resumed job
-- that ends again has a new finished_at, and is measured again.
ALTER TABLE jobs ADD COLUMN final_bytes REAL;
ALTER TABLE jobs ADD COLUMN final_bytes_at REAL;
