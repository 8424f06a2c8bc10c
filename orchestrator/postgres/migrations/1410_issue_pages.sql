-- Issue pages: a guild's or an organisation's issues newest first, every status, after a cursor.
CREATE INDEX issues_guild_newest ON issues (guild_id, created_at DESC, id DESC);
CREATE INDEX issues_org_newest ON issues (org_id, created_at DESC, id DESC);
