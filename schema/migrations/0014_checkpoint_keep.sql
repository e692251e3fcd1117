-- 0014_checkpoint_keep.sql: training.checkpoint_keep, read from the spec
-- once at submit, so that a job's end prunes its checkpoints without
-- parsing its spec again. NULL for a job submitted before: its job.json
-- is read.
ALTER TABLE jobs ADD COLUMN checkpoint_keep INTEGER;
