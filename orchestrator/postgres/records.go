package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// This file holds the collections and records of the artifact store.

const collectionColumns = "a.id, a.key, a.level, a.org_id, COALESCE(a.guild_id, ''), a.spec, a.created_at, a.updated_at"

func scanCollection(r pgx.Row, extra ...any) (orchestrator.Collection, error) {
	var c orchestrator.Collection
	var spec []byte
	dst := append([]any{&c.ID, &c.Name, &c.Level, &c.OrgID, &c.GuildID, &spec, &c.CreatedAt, &c.UpdatedAt}, extra...)
	if err := r.Scan(dst...); err != nil {
		return c, err
	}
	if err := json.Unmarshal(spec, &c.Columns); err != nil {
		return c, fmt.Errorf("collection %s: stored columns: %w", c.ID, err)
	}
	return c, nil
}

// CreateCollection stores a new collection: an organisation table (GuildID empty) or a guild's
// own table. A name already used by a table of the organisation or of any of its guilds is ECONFLICT.
func (s *Store) CreateCollection(ctx context.Context, c orchestrator.Collection) (orchestrator.Collection, error) {
	spec, err := json.Marshal(c.Columns)
	if err != nil {
		return c, fmt.Errorf("create collection: %w", err)
	}
	c.ID = orchestrator.NewID(orchestrator.PrefixArtifact)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// One creator of collections per organisation at a time keeps names unique across its tables.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('collections:' || $1, 0))", c.OrgID); err != nil {
			return err
		}
		var clash string
		err := tx.QueryRow(ctx, `SELECT CASE a.level WHEN 'org' THEN 'the organisation' ELSE 'guild ' || a.guild_id END FROM artifacts a
			WHERE a.kind = 'collection' AND a.org_id = $1 AND a.key = $2 LIMIT 1`, c.OrgID, c.Name).Scan(&clash)
		if err == nil {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "a collection named %q already exists in %s; collection names are unique across an organisation and its guilds, so pick another name", c.Name, clash)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var guild any
		if c.GuildID != "" {
			guild = c.GuildID
		}
		return scanCollectionInto(&c, tx.QueryRow(ctx, `INSERT INTO artifacts AS a (id, kind, level, org_id, guild_id, key, spec, created_at, updated_at)
			VALUES ($1, 'collection', $2, $3, $4, $5, $6, $7, $7) RETURNING `+collectionColumns,
			c.ID, c.Level, c.OrgID, guild, c.Name, spec, c.CreatedAt))
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return c, err
		}
		return c, fmt.Errorf("create collection %s: %w", c.Name, err)
	}
	return c, nil
}

func scanCollectionInto(c *orchestrator.Collection, r pgx.Row) error {
	got, err := scanCollection(r)
	if err != nil {
		return err
	}
	*c = got
	return nil
}

// ListCollections lists the collections owned at level (org or guild) by owner, by name.
func (s *Store) ListCollections(ctx context.Context, level, owner string) ([]orchestrator.Collection, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+collectionColumns+" FROM artifacts a WHERE a.kind = 'collection' AND a.level = $1 AND a.owner = $2 ORDER BY a.key", level, owner)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Collection, error) { return scanCollection(r) })
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	return out, nil
}

// GetCollection reads a collection with its grants.
func (s *Store) GetCollection(ctx context.Context, id string) (orchestrator.Collection, error) {
	c, err := scanCollection(s.pool.QueryRow(ctx, "SELECT "+collectionColumns+" FROM artifacts a WHERE a.kind = 'collection' AND a.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("collection", id)
	}
	if err != nil {
		return c, fmt.Errorf("read collection %s: %w", id, err)
	}
	rows, err := s.pool.Query(ctx, "SELECT collection_id, COALESCE(agent_id, ''), COALESCE(guild_id, ''), access, updated_at FROM collection_grants WHERE collection_id = $1 ORDER BY agent_id IS NULL, agent_id, guild_id", id)
	if err != nil {
		return c, fmt.Errorf("read grants of collection %s: %w", id, err)
	}
	c.Grants, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.CollectionGrant, error) {
		var g orchestrator.CollectionGrant
		err := r.Scan(&g.CollectionID, &g.AgentID, &g.GuildID, &g.Access, &g.UpdatedAt)
		return g, err
	})
	if err != nil {
		return c, fmt.Errorf("read grants of collection %s: %w", id, err)
	}
	return c, nil
}

// PutCollectionGrant writes an agent's or a guild's grant on a collection, replacing the previous one.
func (s *Store) PutCollectionGrant(ctx context.Context, g orchestrator.CollectionGrant) (orchestrator.CollectionGrant, error) {
	var sql string
	var who string
	if g.AgentID != "" {
		who = g.AgentID
		sql = `INSERT INTO collection_grants (collection_id, agent_id, access, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (collection_id, agent_id) WHERE agent_id IS NOT NULL DO UPDATE SET access = EXCLUDED.access, updated_at = EXCLUDED.updated_at`
	} else {
		who = g.GuildID
		sql = `INSERT INTO collection_grants (collection_id, guild_id, access, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (collection_id, guild_id) WHERE guild_id IS NOT NULL DO UPDATE SET access = EXCLUDED.access, updated_at = EXCLUDED.updated_at`
	}
	if _, err := s.pool.Exec(ctx, sql, g.CollectionID, who, g.Access, g.UpdatedAt); err != nil {
		return g, fmt.Errorf("grant collection %s to %s: %w", g.CollectionID, who, err)
	}
	return g, nil
}

// AgentCollections reads the collections an agent may name (its organisation's tables and its
// guild's own tables) with the agent's and its guild's grant rows; name "" reads every one.
func (s *Store) AgentCollections(ctx context.Context, orgID, guildID, agentID, name string) ([]orchestrator.ReachableCollection, error) {
	sql := "SELECT " + collectionColumns + `,
			COALESCE((SELECT g.access FROM collection_grants g WHERE g.collection_id = a.id AND g.agent_id = $3), ''),
			COALESCE((SELECT g.access FROM collection_grants g WHERE g.collection_id = a.id AND g.guild_id = $2), '')
		FROM artifacts a WHERE a.kind = 'collection' AND a.org_id = $1 AND (a.level = 'org' OR a.guild_id = $2)`
	args := []any{orgID, guildID, agentID}
	if name != "" {
		sql += " AND a.key = $4"
		args = append(args, name)
	}
	rows, err := s.pool.Query(ctx, sql+" ORDER BY a.key", args...)
	if err != nil {
		return nil, fmt.Errorf("read collections of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ReachableCollection, error) {
		var rc orchestrator.ReachableCollection
		c, err := scanCollection(r, &rc.AgentAccess, &rc.GuildAccess)
		rc.Collection = c
		return rc, err
	})
	if err != nil {
		return nil, fmt.Errorf("read collections of agent %s: %w", agentID, err)
	}
	return out, nil
}

const recordColumns = "r.id, r.data, r.created_at, r.updated_at"

func scanRecord(r pgx.Row, name string, extra ...any) (orchestrator.Record, error) {
	rec := orchestrator.Record{Collection: name}
	var data []byte
	if err := r.Scan(append([]any{&rec.ID, &data, &rec.CreatedAt, &rec.UpdatedAt}, extra...)...); err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec.Data); err != nil {
		return rec, fmt.Errorf("record %s: stored data: %w", rec.ID, err)
	}
	return rec, nil
}

// AddRecord inserts a record, or, when the collection's unique column matches a live record,
// merges the body into that record in the same statement (so concurrent adds of one unique value
// leave one live record). merge computes the merged write from the existing record's data.
func (s *Store) AddRecord(ctx context.Context, c orchestrator.Collection, w orchestrator.RecordWrite, merge func(existing map[string]any) orchestrator.RecordWrite, now time.Time) (orchestrator.Record, bool, error) {
	data, err := json.Marshal(w.Data)
	if err != nil {
		return orchestrator.Record{}, false, fmt.Errorf("add record to %s: %w", c.Name, err)
	}
	ix := RecordTerms(c, w.Data)
	if w.UniqueValue == nil {
		rec, err := scanRecord(s.pool.QueryRow(ctx, `WITH `+insertWords+`
			INSERT INTO records AS r (id, collection_id, data, search_text, created_at, updated_at, terms)
			VALUES ($1, $2, $3, $4, $5, $5, array_to_tsvector($9::text[])) RETURNING `+recordColumns,
			orchestrator.NewID(orchestrator.PrefixRecord), c.ID, data, w.SearchText, now, words(w), ix.Words, ix.Keys, ix.Lexemes), c.Name)
		if err != nil {
			return rec, false, fmt.Errorf("add record to %s: %w", c.Name, err)
		}
		return rec, false, nil
	}
	var rec orchestrator.Record
	var merged bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := addWords(ctx, tx, c.ID, w.Words, ix); err != nil {
			return err
		}
		// Insert unless a live record holds the value; the partial unique index makes a concurrent
		// insert of the same value wait for this one and then do nothing. Should the holder be
		// removed between the two statements, try again.
		for attempt := 0; ; attempt++ {
			var err error
			rec, err = scanRecord(tx.QueryRow(ctx, `INSERT INTO records AS r (id, collection_id, data, search_text, unique_value, created_at, updated_at, terms)
				VALUES ($1, $2, $3, $4, $5, $6, $6, array_to_tsvector($7::text[]))
				ON CONFLICT (collection_id, unique_value) WHERE deleted_at IS NULL AND unique_value IS NOT NULL DO NOTHING
				RETURNING `+recordColumns, orchestrator.NewID(orchestrator.PrefixRecord), c.ID, data, w.SearchText, *w.UniqueValue, now, ix.Lexemes), c.Name)
			if err == nil || !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			existing, err := scanRecord(tx.QueryRow(ctx, "SELECT "+recordColumns+` FROM records r
				WHERE r.collection_id = $1 AND r.unique_value = $2 AND r.deleted_at IS NULL FOR UPDATE`, c.ID, *w.UniqueValue), c.Name)
			if errors.Is(err, pgx.ErrNoRows) && attempt < 3 {
				continue
			}
			if err != nil {
				return err
			}
			merged = true
			mw := merge(existing.Data)
			mix := RecordTerms(c, mw.Data)
			if err := addWords(ctx, tx, c.ID, mw.Words, mix); err != nil {
				return err
			}
			mdata, err := json.Marshal(mw.Data)
			if err != nil {
				return err
			}
			rec, err = scanRecord(tx.QueryRow(ctx, `UPDATE records r SET data = $2, search_text = $3, updated_at = $4, terms = array_to_tsvector($5::text[]) WHERE r.id = $1 RETURNING `+recordColumns,
				existing.ID, mdata, mw.SearchText, now, mix.Lexemes), c.Name)
			return err
		}
	})
	if err != nil {
		return rec, false, fmt.Errorf("add record to %s: %w", c.Name, err)
	}
	return rec, merged, nil
}

// UpdateRecord applies change to the live record id of the collection in one transaction: change
// gets the current data and returns the write (or a domain error, which aborts). Another live
// record holding the new unique value is ECONFLICT.
func (s *Store) UpdateRecord(ctx context.Context, c orchestrator.Collection, id string, change func(current map[string]any) (orchestrator.RecordWrite, error), now time.Time) (orchestrator.Record, error) {
	var rec orchestrator.Record
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanRecord(tx.QueryRow(ctx, "SELECT "+recordColumns+" FROM records r WHERE r.id = $1 AND r.collection_id = $2 AND r.deleted_at IS NULL FOR UPDATE", id, c.ID), c.Name)
		if errors.Is(err, pgx.ErrNoRows) {
			return orchestrator.Errorf(orchestrator.ENOTFOUND, "no live record %s in collection %s (404); record_list finds ids", id, c.Name)
		}
		if err != nil {
			return err
		}
		w, err := change(cur.Data)
		if err != nil {
			return err
		}
		ix := RecordTerms(c, w.Data)
		if err := addWords(ctx, tx, c.ID, w.Words, ix); err != nil {
			return err
		}
		data, err := json.Marshal(w.Data)
		if err != nil {
			return err
		}
		if w.UniqueValue != nil {
			var other string
			err := tx.QueryRow(ctx, "SELECT id FROM records WHERE collection_id = $1 AND unique_value = $2 AND deleted_at IS NULL AND id <> $3", c.ID, *w.UniqueValue, id).Scan(&other)
			if err == nil {
				return orchestrator.Errorf(orchestrator.ECONFLICT, "record %s already holds %q in the unique column; update that record instead, or pick another value", other, *w.UniqueValue)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		rec, err = scanRecord(tx.QueryRow(ctx, `UPDATE records r SET data = $2, search_text = $3, unique_value = $4, updated_at = $5, terms = array_to_tsvector($6::text[]) WHERE r.id = $1 RETURNING `+recordColumns,
			id, data, w.SearchText, w.UniqueValue, now, ix.Lexemes), c.Name)
		return err
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return rec, err
		}
		if isUniqueViolation(err) {
			return rec, orchestrator.Errorf(orchestrator.ECONFLICT, "another live record of %s took the same unique value at the same time; read it with record_list and update that one", c.Name)
		}
		return rec, fmt.Errorf("update record %s: %w", id, err)
	}
	return rec, nil
}

// insertWords adds the spelling words $6, the stored words $7 and the keys $8 to the vocabularies
// of collection $2 (the CTEs of a record insert).
const insertWords = `words AS (INSERT INTO record_words (collection_id, word) SELECT $2, unnest($6::text[]) ON CONFLICT DO NOTHING),
	vocab AS (INSERT INTO record_vocab (collection_id, word) SELECT $2, unnest($7::text[]) ON CONFLICT DO NOTHING),
	keys AS (INSERT INTO record_keys (collection_id, key) SELECT $2, unnest($8::text[]) ON CONFLICT DO NOTHING)`

// words returns a write's words, never nil.
func words(w orchestrator.RecordWrite) []string {
	if w.Words == nil {
		return []string{}
	}
	return w.Words
}

// addWords adds spelling words and a record's stored words and keys (each sorted, so concurrent
// writers lock them in one order) to a collection's vocabularies.
func addWords(ctx context.Context, tx pgx.Tx, collectionID string, words []string, ix RecordIndex) error {
	if len(words) == 0 && len(ix.Words) == 0 && len(ix.Keys) == 0 {
		return nil
	}
	if words == nil {
		words = []string{}
	}
	_, err := tx.Exec(ctx, `WITH words AS (INSERT INTO record_words (collection_id, word) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING),
		vocab AS (INSERT INTO record_vocab (collection_id, word) SELECT $1, unnest($3::text[]) ON CONFLICT DO NOTHING)
		INSERT INTO record_keys (collection_id, key) SELECT $1, unnest($4::text[]) ON CONFLICT DO NOTHING`, collectionID, words, ix.Words, ix.Keys)
	return err
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	return strings.Contains(err.Error(), "SQLSTATE 23505")
}

// RemoveRecord soft-deletes the live record id of the collection.
func (s *Store) RemoveRecord(ctx context.Context, c orchestrator.Collection, id string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, "UPDATE records SET deleted_at = $3, updated_at = $3 WHERE id = $1 AND collection_id = $2 AND deleted_at IS NULL", id, c.ID, now)
	if err != nil {
		return fmt.Errorf("remove record %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "no live record %s in collection %s (404); record_list finds ids", id, c.Name)
	}
	return nil
}

// CollectionStats returns the number of live records of a collection and its newest change (nil when empty).
func (s *Store) CollectionStats(ctx context.Context, collectionID string) (int, *time.Time, error) {
	var n int
	var newest *time.Time
	err := s.pool.QueryRow(ctx, "SELECT count(*), max(updated_at) FROM records WHERE collection_id = $1 AND deleted_at IS NULL", collectionID).Scan(&n, &newest)
	if err != nil {
		return 0, nil, fmt.Errorf("count records of %s: %w", collectionID, err)
	}
	return n, newest, nil
}

// QueryRecords runs a checked record query: the page of records and, when q.Count, the total of
// every match: counted in the same scan (a window count) when where terms or words narrow the
// rows, else through the index apart; a narrowed page past the end also counts apart.
// The where terms are prepared first (ResolveWhere); when that reads the database, the lookup and
// the page read one snapshot (a read-only repeatable-read transaction whose BEGIN travels with the
// lookup and whose ROLLBACK travels with the page, so it costs no round trip of its own), and a
// record written in between is either wholly seen, its words and keys with it, or not at all.
func (s *Store) QueryRecords(ctx context.Context, q orchestrator.RecordQuery) (int, []orchestrator.Record, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("query records: %w", err)
	}
	defer conn.Release()
	inTx := needsLookup(q)
	var lookup pgx.BatchResults
	q, err = resolveWhere(q, func(sql string, args ...any) (pgx.Rows, error) {
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		b.Queue(sql, args...)
		lookup = conn.SendBatch(ctx, b)
		if _, err := lookup.Exec(); err != nil {
			return nil, err
		}
		return lookup.Query()
	})
	if lookup != nil {
		if cerr := lookup.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if inTx {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return 0, nil, err
	}
	where, args := RecordQuerySQL(q)
	// A query without where terms or words (a whole collection, or its changes since a time)
	// counts through the live-records index apart, and its page stops at the limit; a narrowed
	// query counts its few candidates in the same scan (a window count). Either way one snapshot.
	apart := q.Count && len(q.Where) == 0 && q.Search == ""
	counted := "NULL::bigint"
	if q.Count && !apart {
		counted = "count(*) OVER ()"
	}
	b := &pgx.Batch{}
	if apart && !inTx {
		b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	}
	b.Queue("SELECT "+recordColumns+", r.collection_id, "+counted+" FROM records r WHERE "+where+
		" ORDER BY "+RecordOrder(q)+fmt.Sprintf(" LIMIT %d OFFSET %d", q.Limit, q.Offset), args...)
	if apart {
		b.Queue("SELECT count(*) FROM records r WHERE "+where, args...)
	}
	if inTx || apart {
		b.Queue("ROLLBACK") // read only: nothing to keep
	}
	page := conn.SendBatch(ctx, b)
	total, recs, err := readPage(q, page, apart && !inTx)
	if err == nil && apart {
		err = page.QueryRow().Scan(&total)
	}
	if err == nil && (inTx || apart) {
		_, err = page.Exec()
	}
	if cerr := page.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if inTx || apart {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return 0, nil, fmt.Errorf("query records: %w", err)
	}
	if q.Count && len(recs) == 0 && !apart {
		total = 0
		if q.Offset > 0 {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM records r WHERE "+where, args...).Scan(&total); err != nil {
				return 0, nil, fmt.Errorf("count records: %w", err)
			}
		}
	}
	return total, recs, nil
}

// readPage reads the page of a record query (and its window total) from a batch, after its
// BEGIN when begun.
func readPage(q orchestrator.RecordQuery, br pgx.BatchResults, begun bool) (int, []orchestrator.Record, error) {
	if begun {
		if _, err := br.Exec(); err != nil {
			return 0, nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return 0, nil, err
	}
	total := -1
	var recs []orchestrator.Record
	for rows.Next() {
		var cid string
		var n *int64
		rec, err := scanRecord(rows, "", &cid, &n)
		if err != nil {
			rows.Close()
			return 0, nil, err
		}
		if n != nil {
			total = int(*n)
		}
		rec.Collection = q.Collections[cid]
		recs = append(recs, rec)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	return total, recs, nil
}

// RecordQuerySQL returns the WHERE clause (over records r) and its arguments for a checked query.
// Column names come from the collection's declaration and are quoted as SQL literals.
func RecordQuerySQL(q orchestrator.RecordQuery) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	ids := make([]string, 0, len(q.Collections))
	for id := range q.Collections {
		ids = append(ids, id)
	}
	var conds []string
	if len(ids) == 1 {
		conds = append(conds, "r.collection_id = "+arg(ids[0]))
	} else {
		conds = append(conds, "r.collection_id = ANY("+arg(ids)+"::text[])")
	}
	conds = append(conds, "r.deleted_at IS NULL")
	if q.Search != "" {
		if q.Substring {
			conds = append(conds, "r.search_text ILIKE "+arg(likePattern(q.Search)))
		} else {
			conds = append(conds, "r.search @@ websearch_to_tsquery('simple', "+arg(q.Search)+")")
		}
	}
	if q.Since != nil {
		conds = append(conds, "r.updated_at > "+arg(*q.Since))
	}
	// The index narrows the rows: one condition per group, which the index intersects.
	for _, f := range q.Where {
		for _, g := range f.Narrow {
			conds = append(conds, "r.terms @@ "+arg(tsGroup(g))+"::tsquery")
		}
	}
	for _, f := range q.Where {
		col := quoteLiteral(f.Column)
		switch f.Op {
		case orchestrator.FilterNull:
			conds = append(conds, fmt.Sprintf("(NOT r.data ? %s OR r.data->%s = '[]'::jsonb)", col, col))
		case orchestrator.FilterMatch:
			conds = append(conds, matchSQL(f, col, arg))
		case orchestrator.FilterIn:
			var ors []string
			for _, v := range f.Values {
				doc, _ := json.Marshal(map[string]any{f.Column: v})
				ors = append(ors, "r.data @> "+arg(string(doc))+"::jsonb")
			}
			conds = append(conds, "("+strings.Join(ors, " OR ")+")")
		case orchestrator.FilterRange:
			expr := fmt.Sprintf("(r.data->>%s)", col)
			if f.Type == orchestrator.ColNumber {
				expr = fmt.Sprintf("(CASE jsonb_typeof(r.data->%s) WHEN 'number' THEN (r.data->>%s)::numeric END)", col, col)
			}
			if f.Gte != nil {
				conds = append(conds, expr+" >= "+arg(f.Gte))
			}
			if f.Lte != nil {
				conds = append(conds, expr+" <= "+arg(f.Lte))
			}
		}
	}
	return strings.Join(conds, " AND "), args
}

// SimilarSpelling is the least trigram similarity between a term's word and a stored word for the
// two to count as similar spelling.
const SimilarSpelling = 0.45

// ResolveWhere prepares the where terms of a query over one collection, in at most one query: for
// match terms, the words of the collection's vocabulary spelled like each word (3 characters or
// more) of the term (Spelling); for every term that can, the groups of index lexemes that narrow
// it (Narrow): the exact values of an in term, the stored keys within a range, and the stored
// words holding each word of a match term or one of its spellings.
func (s *Store) ResolveWhere(ctx context.Context, q orchestrator.RecordQuery) (orchestrator.RecordQuery, error) {
	return resolveWhere(q, func(sql string, args ...any) (pgx.Rows, error) { return s.pool.Query(ctx, sql, args...) })
}

// needsLookup reports whether preparing the query's where terms reads the database: a match term
// with a word of 3 characters or more, or a range, over one collection.
func needsLookup(q orchestrator.RecordQuery) bool {
	if len(q.Collections) != 1 {
		return false
	}
	for _, f := range q.Where {
		if f.Op == orchestrator.FilterRange {
			return true
		}
		if f.Op == orchestrator.FilterMatch {
			for _, t := range orchestrator.TermTokens(f.Text) {
				if len([]rune(t)) >= 3 {
					return true
				}
			}
		}
	}
	return false
}

// resolveWhere is ResolveWhere, reading the database through lookup (run once, when needsLookup).
func resolveWhere(q orchestrator.RecordQuery, lookup func(sql string, args ...any) (pgx.Rows, error)) (orchestrator.RecordQuery, error) {
	if len(q.Collections) != 1 || len(q.Where) == 0 {
		return q, nil
	}
	var collectionID string
	for id := range q.Collections {
		collectionID = id
	}
	tokens := []string{}
	var rangeTerms []int32
	var los, his []string
	for i, f := range q.Where {
		switch f.Op {
		case orchestrator.FilterMatch:
			for _, t := range orchestrator.TermTokens(f.Text) {
				if len([]rune(t)) >= 3 {
					tokens = append(tokens, t)
				}
			}
		case orchestrator.FilterRange:
			lo, hi := uint64(0), uint64(math.MaxUint64)
			ok := true
			if f.Gte != nil {
				lo, ok = orderKey(f.Type, f.Gte)
			}
			if f.Lte != nil && ok {
				hi, ok = orderKey(f.Type, f.Lte)
			}
			if ok {
				rangeTerms = append(rangeTerms, int32(i))
				los = append(los, f.Column+":"+hexKey(lo))
				his = append(his, f.Column+":"+hexKey(hi))
			}
		}
	}
	similar := map[string][]string{}
	holders := map[string][]string{}
	keys := map[int][]string{}
	if needsLookup(q) {
		// s: the similar spellings of each word; h: up to maxHolders+1 stored words holding each
		// word or spelling the trigram index can look up (ASCII letters and digits); k: up to
		// maxKeys+1 stored keys within each range.
		rows, err := lookup(`WITH t AS (SELECT DISTINCT unnest($2::text[]) AS t),
			s AS (SELECT t.t, w.word FROM t JOIN record_words w ON w.collection_id = $1 AND w.word % t.t AND similarity(w.word, t.t) >= $3 AND w.word <> t.t),
			a AS (SELECT t AS a FROM t UNION SELECT word FROM s)
			SELECT 's', s.t, s.word FROM s
			UNION ALL
			SELECT 'h', a.a, h.word FROM a CROSS JOIN LATERAL (SELECT v.word FROM record_vocab v
				WHERE v.collection_id = $1 AND v.word ILIKE '%' || a.a || '%' LIMIT $4) h
			WHERE a.a ~ '^[a-z0-9]{3,}$'
			UNION ALL
			SELECT 'k', r.i::text, k.key FROM unnest($5::int[], $6::text[], $7::text[]) AS r(i, lo, hi) CROSS JOIN LATERAL (SELECT key FROM record_keys
				WHERE collection_id = $1 AND key >= r.lo COLLATE "C" AND key <= r.hi COLLATE "C" ORDER BY key LIMIT $8) k
			ORDER BY 1, 2, 3`, collectionID, tokens, SimilarSpelling, maxHolders+1, rangeTerms, los, his, maxKeys+1)
		if err != nil {
			return q, fmt.Errorf("prepare where terms: %w", err)
		}
		for rows.Next() {
			var kind, t, w string
			if err := rows.Scan(&kind, &t, &w); err != nil {
				rows.Close()
				return q, fmt.Errorf("prepare where terms: %w", err)
			}
			switch kind {
			case "s":
				similar[t] = append(similar[t], w)
			case "h":
				holders[t] = append(holders[t], w)
			default:
				i, _ := strconv.Atoi(t)
				keys[i] = append(keys[i], w)
			}
		}
		if err := rows.Err(); err != nil {
			return q, fmt.Errorf("prepare where terms: %w", err)
		}
	}
	where := make([]orchestrator.RecordFilter, len(q.Where))
	copy(where, q.Where)
	for i, f := range where {
		p := termPrefix(collectionID, f.Column)
		f.Narrow = nil
		switch f.Op {
		case orchestrator.FilterIn:
			var lexemes []string
			for _, v := range f.Values {
				lex, ok := exactLexeme(p, f.Type, v)
				if !ok {
					lexemes = nil
					break
				}
				lexemes = append(lexemes, lex)
			}
			if lexemes != nil {
				f.Narrow = [][]string{group(p, lexemes)}
			}
		case orchestrator.FilterRange:
			if ks := keys[i]; slices.Contains(rangeTerms, int32(i)) && len(ks) <= maxKeys {
				lexemes := make([]string, len(ks))
				for j, k := range ks {
					lexemes[j] = p + "#" + strings.TrimPrefix(k, f.Column+":")
				}
				f.Narrow = [][]string{group(p, lexemes)}
			}
		case orchestrator.FilterMatch:
			// Only an ASCII term narrows: then its words and the stored words holding them fold
			// case the same way in Go and in the exact ILIKE test.
			ascii := isASCII(f.Text)
			f.Spelling = map[string][]string{}
			for _, t := range orchestrator.TermTokens(f.Text) {
				f.Spelling[t] = similar[t]
				if hs, ok := tokenHolders(t, similar[t], holders); ok && ascii {
					lexemes := make([]string, len(hs))
					for j, h := range hs {
						lexemes[j] = p + "w" + h
					}
					f.Narrow = append(f.Narrow, group(p, lexemes))
				}
			}
		}
		where[i] = f
	}
	q.Where = where
	return q, nil
}

// tokenHolders returns the stored words holding a term word or one of its spellings, sorted and
// distinct; false when a spelling cannot be looked up or is held by too many words to narrow.
func tokenHolders(t string, spellings []string, holders map[string][]string) ([]string, bool) {
	seen := map[string]bool{}
	var out []string
	for _, a := range append([]string{t}, spellings...) {
		if !narrowableWord(a) || len(holders[a]) > maxHolders {
			return nil, false
		}
		for _, h := range holders[a] {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	sort.Strings(out)
	return out, true
}

// matchSQL is a where term matching text, or an item of a text[] column, by substring or similar
// spelling: the whole term as a substring, or each of its words as a substring or as one of the
// collection's words spelled like it (f.Spelling, from ResolveWhere). Unless the index terms
// narrow the term (f.Narrow), a whole-record test lets the trigram index narrow the rows before
// the column test decides.
func matchSQL(f orchestrator.RecordFilter, col string, arg func(any) string) string {
	whole := arg(likePattern(f.Text))
	tokens := orchestrator.TermTokens(f.Text)
	var alts []string
	spelled := false
	for _, tok := range tokens {
		a := append([]string{tok}, f.Spelling[tok]...) // letters and digits only: safe in a regular expression
		spelled = spelled || len(a) > 1
		alts = append(alts, strings.Join(a, "|"))
	}
	var pats []string
	if spelled || len(tokens) != 1 || !strings.EqualFold(tokens[0], f.Text) { // else the substring test says it all
		for _, a := range alts {
			pats = append(pats, arg(a))
		}
	}
	test := func(v string) string {
		if len(pats) == 0 {
			return fmt.Sprintf("%s ILIKE %s", v, whole)
		}
		words := make([]string, len(pats))
		for i, p := range pats {
			words[i] = fmt.Sprintf("%s ~* %s", v, p)
		}
		return fmt.Sprintf("(%s ILIKE %s OR (%s))", v, whole, strings.Join(words, " AND "))
	}
	pre := fmt.Sprintf("r.search_text ILIKE %s AND ", whole)
	if len(f.Narrow) > 0 {
		pre = "" // narrowed by the index terms
	} else if len(pats) > 0 {
		longest := 0
		for i, tok := range tokens {
			if len(tok) > len(tokens[longest]) {
				longest = i
			}
		}
		pre = fmt.Sprintf("(r.search_text ILIKE %s OR r.search_text ~* %s) AND ", whole, pats[longest])
	}
	if f.Type == orchestrator.ColTextList {
		return pre + fmt.Sprintf("EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE jsonb_typeof(r.data->%s) WHEN 'array' THEN r.data->%s ELSE '[]'::jsonb END) e(v) WHERE %s)", col, col, test("e.v"))
	}
	return pre + test(fmt.Sprintf("(r.data->>%s)", col))
}

// RecordOrder returns the ORDER BY of a checked query; ties break on id so pages are stable.
func RecordOrder(q orchestrator.RecordQuery) string {
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	var expr string
	switch q.OrderBy {
	case "", "updated_at": // never null: the order of records_changed, so a page stops at its limit
		return "r.updated_at" + dir + ", r.id" + dir
	case "created_at":
		return "r.created_at" + dir + ", r.id" + dir
	case "id":
		return "r.id" + dir
	default:
		col := quoteLiteral(q.OrderBy)
		switch q.OrderType {
		case orchestrator.ColNumber:
			expr = fmt.Sprintf("(CASE jsonb_typeof(r.data->%s) WHEN 'number' THEN (r.data->>%s)::numeric END)", col, col)
		case orchestrator.ColBoolean:
			expr = fmt.Sprintf("(r.data->%s)", col)
		default:
			expr = fmt.Sprintf("(r.data->>%s)", col)
		}
	}
	return expr + dir + " NULLS LAST, r.id" + dir
}

// likePattern is an ILIKE pattern matching s anywhere, with LIKE's special characters escaped.
func likePattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// quoteLiteral quotes s as an SQL string literal (column names are checked identifiers already).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ListRecordsForOperator lists a collection's live records, newest change first, with the total.
func (s *Store) ListRecordsForOperator(ctx context.Context, c orchestrator.Collection, limit, offset int) (int, []orchestrator.Record, error) {
	return s.QueryRecords(ctx, orchestrator.RecordQuery{Collections: map[string]string{c.ID: c.Name}, Desc: true, Limit: limit, Offset: offset, Count: true})
}
