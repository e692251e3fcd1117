-- store.sql: punchcardd's SQLite schema, version 1 (the baseline migration).
-- Later changes go to schema/migrations/NNNN_what.sql; the daemon embeds
-- both at build time and applies what PRAGMA user_version says is missing.

-- One row per accepted job. `seq` gives FIFO order; `id` is the opaque
-- public id (12 lowercase hex).
CREATE TABLE jobs (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT    NOT NULL UNIQUE,
    owner             TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    state             TEXT    NOT NULL CHECK (state IN ('queued', 'starting', 'running',
                              'succeeded', 'failed', 'cancelled', 'timeout')),
    priority          INTEGER NOT NULL DEFAULT 0,
    ranks             INTEGER NOT NULL CHECK (ranks >= 1),
    trainer           TEXT    NOT NULL,
    workers           INTEGER NOT NULL,
    threads           INTEGER NOT NULL DEFAULT 1,
    time_limit_s      INTEGER NOT NULL DEFAULT 0,
    -- Fair share: the start tag of start-time fair queuing. A job's tag is
    -- max(clock, the owner's previous finish tag); its finish tag adds its
    -- ranks. Queued jobs run by priority, then tag, then seq.
    vstart            REAL    NOT NULL DEFAULT 0,
    spec              TEXT    NOT NULL,            -- the job as submitted
    submitted_at      REAL    NOT NULL,
    started_at        REAL,                        -- left the queue
    finished_at       REAL,
    exit_code         INTEGER,
    error             TEXT,
    -- The supervisor of a started job: its pid and start time (clock ticks
    -- since boot, /proc/PID/stat field 22) identify it across restarts; sid
    -- is the session of mpirun and its ranks.
    supervisor_pid    INTEGER,
    supervisor_start  INTEGER,
    sid               INTEGER,
    -- Why the daemon asked the job to stop ('cancel' or 'timeout'), and when:
    -- the final state follows the request, and SIGKILL follows the grace period.
    stop_reason       TEXT CHECK (stop_reason IN ('cancel', 'timeout')),
    stop_requested_at REAL,
    killed            INTEGER NOT NULL DEFAULT 0,  -- SIGKILL already sent
    -- Frozen copies of the run directory's last progress and result (JSON)
    -- once the job has finished.
    progress          TEXT,
    result            TEXT
);

CREATE INDEX jobs_queue ON jobs (priority DESC, vstart, seq) WHERE state = 'queued';
CREATE INDEX jobs_owner ON jobs (owner, state, seq);
CREATE INDEX jobs_owner_seq ON jobs (owner, seq);
CREATE INDEX jobs_state ON jobs (state);

-- Every state change, timestamped (UNIX seconds).
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    job_id     TEXT    NOT NULL,
    at         REAL    NOT NULL,
    from_state TEXT,
    to_state   TEXT    NOT NULL,
    detail     TEXT
);
CREATE INDEX events_job ON events (job_id, id);

-- Per-owner fair-share state: the finish tag of the owner's last job.
CREATE TABLE owners (
    owner   TEXT PRIMARY KEY,
    vfinish REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Scheduler-wide values: 'vclock' (the start tag of the last started job).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('vclock', 0);
