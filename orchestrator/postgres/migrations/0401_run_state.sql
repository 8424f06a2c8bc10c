-- What a run starts knowing besides its tools (state.prices: the pinned coins quoted at run
-- start); NULL when it starts knowing nothing more.
ALTER TABLE runs ADD COLUMN state jsonb;
