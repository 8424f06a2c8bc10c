-- The MCP client (issue 17): custom servers an instance admin adds (slugs with hyphens, up to
-- 40 characters), admin URLs and named endpoints that survive reseeds, and per connection the
-- transport that worked, the last listing error and the relist lease that lets one orchestrator
-- of several on this database relist a login at a time.

ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_slug_check;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_slug_check CHECK (slug ~ '^[a-z][a-z0-9_-]{0,39}$');
ALTER TABLE mcp_servers
    ADD COLUMN custom          boolean NOT NULL DEFAULT false, -- added by an admin, never touched by a reseed
    ADD COLUMN admin_url       text,                           -- the admin's URL; NULL: url (the seeded one)
    ADD COLUMN endpoints       jsonb NOT NULL DEFAULT '{}',    -- the manifest's [endpoints]
    ADD COLUMN admin_endpoints jsonb NOT NULL DEFAULT '{}';    -- the admin's endpoint URLs, by name

ALTER TABLE mcp_connections
    ADD COLUMN transport    text NOT NULL DEFAULT '' CHECK (transport IN ('', 'streamable-http', 'sse')),
    ADD COLUMN list_error   text NOT NULL DEFAULT '',          -- what the last failed listing answered
    ADD COLUMN relist_until timestamptz;                       -- a relist is under way (or backing off) until then
