-- 0004_hosts.sql: placement on several hosts.
-- `hosts` is a started job's allocation, the JSON text
-- [{"host": "h1", "ranks": 2}, {"host": "h2", "ranks": 1}] in rank order
-- (rank 0 on the first host): the slots (and, counted per host, the GPUs)
-- the job holds, so a restarted daemon knows what its re-adopted jobs
-- occupy. NULL while queued, and for jobs started before this migration
-- (their ranks are charged to the hosts in order when they are counted).
ALTER TABLE jobs ADD COLUMN hosts TEXT;
