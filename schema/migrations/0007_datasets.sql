-- 0007_datasets.sql: datasets users upload (PUT /api/v1/datasets/NAME).
-- One row per (owner, name); the file is DATA_DIR/uploads/OWNERDIR/NAME
-- (OWNERDIR: hex of the owner's SHA-256, so any identity makes a safe
-- directory name). `shapes` is JSON text (member or part -> shape), `records`
-- the samples the format check counted (NULL when the file holds tensors,
-- not samples: an .npz of weights, a .safetensors).
CREATE TABLE datasets (
    owner      TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    format     TEXT    NOT NULL,
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    sha256     TEXT    NOT NULL,
    records    INTEGER,
    shapes     TEXT    NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (owner, name)
) WITHOUT ROWID;
