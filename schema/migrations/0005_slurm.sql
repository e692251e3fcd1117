-- 0005_slurm.sql: jobs handed to Slurm (scheduler = slurm).
-- `slurm_id` is the Slurm job id sbatch returned, recorded the moment it is
-- known, so a restarted punchcardd follows (and cancels) the job by it;
-- NULL under the local scheduler and until submitted. `slurm_reason` is
-- Slurm's reason for a pending job ("Priority", "Resources"), shown as the
-- job's waiting_for; NULL when Slurm gives none.
ALTER TABLE jobs ADD COLUMN slurm_id INTEGER;
ALTER TABLE jobs ADD COLUMN slurm_reason TEXT;
