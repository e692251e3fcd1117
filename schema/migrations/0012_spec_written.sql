-- 0012_spec_written.sql: the spec as its user wrote it ("@NAME", 0.2),
-- beside the resolved one that runs ("@/data/uploads/.../NAME"), so that
-- GET /api/v1/jobs/{id}/spec answers with text a new submit accepts.
-- NULL for jobs submitted before: they answer with the resolved spec.
ALTER TABLE jobs ADD COLUMN spec_written TEXT;
