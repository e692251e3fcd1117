-- 0015_owner_queued.sql: each owner's number of queued jobs, kept by
-- triggers, so that a submit checks max_queued with one row read instead of
-- counting the owner's queue (a COUNT reads every counted index entry: a
-- user with thousands of queued jobs made every submit slower, issue 31
-- #10). Numbered after 0014; another branch may add one too: renumber at
-- the merge.
ALTER TABLE owners ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;

INSERT OR IGNORE INTO owners (owner) SELECT DISTINCT owner FROM jobs WHERE state = 'queued';
UPDATE owners SET queued = (SELECT COUNT(*) FROM jobs j
                            WHERE j.owner = owners.owner AND j.state = 'queued');

CREATE TRIGGER owners_queued_insert AFTER INSERT ON jobs WHEN new.state = 'queued'
BEGIN
    INSERT OR IGNORE INTO owners (owner) VALUES (new.owner);
    UPDATE owners SET queued = queued + 1 WHERE owner = new.owner;
END;

CREATE TRIGGER owners_queued_enter AFTER UPDATE OF state ON jobs
    WHEN old.state != 'queued' AND new.state = 'queued'
BEGIN
    INSERT OR IGNORE INTO owners (owner) VALUES (new.owner);
    UPDATE owners SET queued = queued + 1 WHERE owner = new.owner;
END;

CREATE TRIGGER owners_queued_leave AFTER UPDATE OF state ON jobs
    WHEN old.state = 'queued' AND new.state != 'queued'
BEGIN
    UPDATE owners SET queued = queued - 1 WHERE owner = old.owner;
END;

CREATE TRIGGER owners_queued_delete AFTER DELETE ON jobs WHEN old.state = 'queued'
BEGIN
    UPDATE owners SET queued = queued - 1 WHERE owner = old.owner;
END;
