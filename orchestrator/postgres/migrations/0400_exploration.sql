-- Exploration figures of a coding run (calls_before_first_edit, read_bytes_unedited), written when
-- a generation closes; NULL until the first one.
ALTER TABLE runs ADD COLUMN exploration jsonb;
