-- Every change to a connection's listed tools bumps its tools_version, whoever writes them: a run
-- start reads the version, and the tools themselves only when its process has not cached that
-- version of them.
ALTER TABLE mcp_connections ADD COLUMN tools_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION mcp_tools_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE mcp_connections SET tools_version = tools_version + 1
    WHERE id IN (SELECT DISTINCT connection_id FROM changed);
    RETURN NULL;
END
$$;

CREATE TRIGGER mcp_tools_inserted AFTER INSERT ON mcp_tools
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mcp_tools_bump_version();
CREATE TRIGGER mcp_tools_updated AFTER UPDATE ON mcp_tools
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mcp_tools_bump_version();
CREATE TRIGGER mcp_tools_updated_from AFTER UPDATE ON mcp_tools
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mcp_tools_bump_version();
CREATE TRIGGER mcp_tools_deleted AFTER DELETE ON mcp_tools
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mcp_tools_bump_version();
