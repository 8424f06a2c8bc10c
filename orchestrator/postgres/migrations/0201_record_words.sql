-- The words of each collection's text values: similar spelling in a where term looks its words up
-- here (a small table with a trigram index) instead of comparing every record's text.
CREATE TABLE record_words (
    collection_id text NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    word          text NOT NULL,
    PRIMARY KEY (collection_id, word)
);
CREATE INDEX record_words_trgm ON record_words USING gin (word gin_trgm_ops);
