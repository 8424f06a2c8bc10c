-- Index terms of each record, so where terms narrow the rows through one index before the exact
-- test reads them. The store writes the lexemes (postgres/record_terms.go): for column c of a
-- collection whose id ends in k, "k:c:w<word>" for each word of a text or text[] value,
-- "k:c:=<value>" for a text, id or boolean value, "k:c:#<16 hex digits>" for a number or datetime
-- (a key in value order), and "k:c:~" when some value of the column is not indexed. Every
-- narrowing accepts "~", so a record is never lost to the index, only read.
ALTER TABLE records ADD COLUMN terms tsvector;
-- Records written before index terms existed are unindexed in every column until their next write.
UPDATE records r SET terms = array_to_tsvector(ARRAY(
    SELECT right(r.collection_id, 6) || ':' || (c->>'name') || ':~' FROM artifacts a, jsonb_array_elements(a.spec) c
    WHERE a.id = r.collection_id))
WHERE terms IS NULL;
ALTER TABLE records ALTER COLUMN terms SET NOT NULL;
CREATE INDEX records_terms ON records USING gin (terms) WHERE deleted_at IS NULL;
-- Exact values now narrow through records_terms; the jsonb index only cost every write.
DROP INDEX records_data;

-- Every word of each collection's text values, as written: a substring where term looks up the
-- words holding it here (a trigram index) and narrows by their lexemes.
CREATE TABLE record_vocab (
    collection_id text NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    word          text NOT NULL,
    PRIMARY KEY (collection_id, word)
);
CREATE INDEX record_vocab_trgm ON record_vocab USING gin (word gin_trgm_ops);

-- Every key of each collection's number and datetime values ("<column>:<16 hex digits>", byte
-- order is value order): a range where term reads the keys within it here and narrows by them.
CREATE TABLE record_keys (
    collection_id text NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    key           text COLLATE "C" NOT NULL,
    PRIMARY KEY (collection_id, key)
);
