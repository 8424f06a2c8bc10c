-- Scripts are artifacts of kind script (content holds the source); their description, parameters
-- schema and hash live beside them. A run snapshots each script's source and hash on its first
-- script call.

CREATE TABLE script_details (
    artifact_id text PRIMARY KEY REFERENCES artifacts (id) ON DELETE CASCADE,
    description text NOT NULL CHECK (char_length(description) BETWEEN 1 AND 400),
    parameters  jsonb,
    hash        text NOT NULL
);

CREATE TABLE run_script_snapshots (
    run_id   text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    taken_at timestamptz NOT NULL
);

CREATE TABLE run_scripts (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name   text NOT NULL,
    source text NOT NULL,
    hash   text NOT NULL,
    PRIMARY KEY (run_id, name)
);
