-- 0009_memory.sql: a job's estimated memory per rank in bytes (memest.c),
-- recorded at submit and charged to the hosts it runs on like its slots, so
-- the jobs started on a host never add up to more than its memory. NULL for
-- a job submitted before this migration: not charged.
ALTER TABLE jobs ADD COLUMN mem_per_rank REAL;
