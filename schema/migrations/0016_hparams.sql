-- 0016_hparams.sql: a job's key hyperparameters (model, optimizer, lr,
-- batch_size, epochs) as compact JSON, made from the parsed spec once at
-- submit (lib/jobspec/spec_hparams.h), so that a list page shows them with
-- its one query and no spec parsed per row. NULL for a job submitted
-- before: the list shows it without them.
ALTER TABLE jobs ADD COLUMN hparams TEXT;
