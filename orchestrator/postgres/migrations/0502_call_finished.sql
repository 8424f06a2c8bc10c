-- A call is started exactly while it has no finished_at: completing it finds it by its key and
-- finished_at IS NULL (tool_calls_started, on status, keeps entries of completed calls until vacuum).
ALTER TABLE tool_calls ADD CONSTRAINT tool_calls_started_unfinished CHECK ((status = 'started') = (finished_at IS NULL)) NOT VALID;
ALTER TABLE tool_calls VALIDATE CONSTRAINT tool_calls_started_unfinished;
