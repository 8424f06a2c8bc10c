-- An extra guild URL on the GitHub host, once a login's installation was found to reach it: the
-- login (so later starts ask its token without listing the installation again) and GitHub's id.
ALTER TABLE guild_repositories ADD COLUMN via_connection_id text REFERENCES mcp_connections (id) ON DELETE SET NULL;
