-- 0003_gpus.sql: GPUs as a scheduler resource.
-- `gpus` is what a job holds while it runs: resources.gpus (per worker)
-- times its workers; the parameter-server rank of an asynchronous trainer
-- needs none. `gpu_devices` lists the device indices punchcardd gave a
-- started job on a single host ("0,1", its CUDA_VISIBLE_DEVICES), so a
-- restarted daemon knows which devices its re-adopted jobs hold; NULL when
-- the job has no GPUs or runs across a hostfile's hosts (counted only).
ALTER TABLE jobs ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0 CHECK (gpus >= 0);
ALTER TABLE jobs ADD COLUMN gpu_devices TEXT;

-- Jobs accepted before this migration: their specs were validated at submit.
UPDATE jobs SET gpus = coalesce(json_extract(spec, '$.resources.gpus'), 0) * workers
    WHERE json_valid(spec) AND json_type(spec, '$.resources.gpus') = 'integer';
