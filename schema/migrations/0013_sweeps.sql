-- 0013_sweeps.sql: hyperparameter sweeps (issue 33). A sweep is its
-- request as submitted (`doc`: the job spec and the search) and one row per
-- trial: its parameters, the job that runs it once submitted (an ordinary
-- job of the owner), the epochs that job is asked for now (`budget`, which
-- ASHA raises on promotion) and its rung records as JSON text
-- [{"epochs", "metric", "completed_at", "promoted_at"}].
CREATE TABLE sweeps (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    owner       TEXT NOT NULL,
    name        TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    finished_at REAL,
    doc         TEXT NOT NULL
);
CREATE INDEX sweeps_owner ON sweeps (owner, seq);
CREATE TABLE sweep_trials (
    sweep_id TEXT NOT NULL,
    idx      INTEGER NOT NULL,
    params   TEXT NOT NULL,
    job_id   TEXT,
    budget   INTEGER NOT NULL DEFAULT 0,
    rungs    TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (sweep_id, idx)
);
CREATE INDEX sweep_trials_job ON sweep_trials (job_id) WHERE job_id IS NOT NULL;
