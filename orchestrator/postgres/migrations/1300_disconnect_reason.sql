-- Why a login is disconnected, when something other than its provider ended it (an instance admin
-- pointed its server elsewhere); cleared whenever the login leaves that state (a new Connect).
ALTER TABLE mcp_connections ADD COLUMN disconnect_reason text NOT NULL DEFAULT '';

CREATE FUNCTION guilds_connection_reason() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'disconnected' THEN
        NEW.disconnect_reason := '';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER mcp_connections_reason BEFORE UPDATE ON mcp_connections FOR EACH ROW EXECUTE FUNCTION guilds_connection_reason();
