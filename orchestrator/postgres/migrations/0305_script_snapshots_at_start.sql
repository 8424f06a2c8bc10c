-- A run's script snapshot is taken when the run starts, before its row is written (the run start
-- offers the parameterised scripts from that same snapshot), so a snapshot is keyed by the run's id
-- and belongs to the agent: it no longer references runs. It also keeps each script's description
-- and parameters, so script_list shows what this run can run. Agents keep max_scripts in config.

ALTER TABLE run_scripts DROP CONSTRAINT run_scripts_run_id_fkey;
ALTER TABLE run_script_snapshots DROP CONSTRAINT run_script_snapshots_run_id_fkey;

ALTER TABLE run_script_snapshots ADD COLUMN agent_id text REFERENCES agents (id) ON DELETE CASCADE;
UPDATE run_script_snapshots s SET agent_id = r.agent_id FROM runs r WHERE r.id = s.run_id;
DELETE FROM run_script_snapshots WHERE agent_id IS NULL;
ALTER TABLE run_script_snapshots ALTER COLUMN agent_id SET NOT NULL;
CREATE INDEX run_script_snapshots_agent ON run_script_snapshots (agent_id, taken_at);

ALTER TABLE run_scripts ADD COLUMN description text NOT NULL DEFAULT '';
ALTER TABLE run_scripts ADD COLUMN parameters jsonb;
UPDATE run_scripts rs SET description = d.description, parameters = d.parameters
    FROM run_script_snapshots s, artifacts a JOIN script_details d ON d.artifact_id = a.id
    WHERE s.run_id = rs.run_id AND a.kind = 'script' AND a.level = 'agent' AND a.agent_id = s.agent_id AND a.key = rs.name;
DELETE FROM run_scripts rs WHERE NOT EXISTS (SELECT 1 FROM run_script_snapshots s WHERE s.run_id = rs.run_id);
ALTER TABLE run_scripts ADD CONSTRAINT run_scripts_snapshot_fkey
    FOREIGN KEY (run_id) REFERENCES run_script_snapshots (run_id) ON DELETE CASCADE;

-- Open runs that started before this migration and have not snapshotted yet take their snapshot now.
WITH taken AS (
    INSERT INTO run_script_snapshots (run_id, agent_id, taken_at)
        SELECT r.id, r.agent_id, now() FROM runs r
        WHERE r.status = 'open' AND NOT EXISTS (SELECT 1 FROM run_script_snapshots s WHERE s.run_id = r.id)
    RETURNING run_id, agent_id
)
INSERT INTO run_scripts (run_id, name, source, hash, description, parameters)
    SELECT t.run_id, a.key, a.content, d.hash, d.description, d.parameters
    FROM taken t JOIN artifacts a ON a.kind = 'script' AND a.level = 'agent' AND a.agent_id = t.agent_id
    JOIN script_details d ON d.artifact_id = a.id;

-- Agents stored before max_scripts existed get the default.
UPDATE agents SET config = config || '{"max_scripts": 10}'::jsonb WHERE NOT config ? 'max_scripts';
