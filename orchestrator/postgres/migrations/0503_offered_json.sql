-- A run's offered tools are an opaque snapshot the database never looks into: json keeps the text
-- as written, so a run start does not pay for jsonb's parse (schemas of every offered tool).
ALTER TABLE runs ALTER COLUMN offered_tools TYPE json USING offered_tools::json;
