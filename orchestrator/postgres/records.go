package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres/recordquery"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file holds the records of the artifact store's collections: writes (with their index
// terms and vocabularies) and checked queries, compiled to SQL by recordquery.

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
	ix := recordquery.Terms(c, w.Data)
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
			mix := recordquery.Terms(c, mw.Data)
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
		ix := recordquery.Terms(c, w.Data)
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
func addWords(ctx context.Context, tx pgx.Tx, collectionID string, words []string, ix recordquery.Index) error {
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
// The where terms are prepared first (recordquery.Resolve); when that reads the database, the
// lookup and the page read one snapshot (a read-only repeatable-read transaction whose BEGIN
// travels with the lookup and whose ROLLBACK travels with the page, so it costs no round trip of
// its own), and a record written in between is either wholly seen, its words and keys with it, or
// not at all.
func (s *Store) QueryRecords(ctx context.Context, q orchestrator.RecordQuery) (int, []orchestrator.Record, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("query records: %w", err)
	}
	defer conn.Release()
	inTx := recordquery.NeedsLookup(q)
	lookup := &snapshotLookup{conn: conn}
	q, err = recordquery.Resolve(ctx, lookup, q)
	if lookup.sent != nil {
		if cerr := lookup.sent.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if inTx {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return 0, nil, err
	}
	where, args := recordquery.Where(q)
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
		" ORDER BY "+recordquery.Order(q)+fmt.Sprintf(" LIMIT %d OFFSET %d", q.Limit, q.Offset), args...)
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

// snapshotLookup sends the lookup that prepares a query's where terms after the BEGIN of a
// read-only repeatable-read transaction, in one batch, so the page read after it sees the same
// snapshot; sent holds the batch, which the caller closes.
type snapshotLookup struct {
	conn *pgxpool.Conn
	sent pgx.BatchResults
}

// Query sends BEGIN and the lookup and returns the lookup's rows.
func (l *snapshotLookup) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue(sql, args...)
	l.sent = l.conn.SendBatch(ctx, b)
	if _, err := l.sent.Exec(); err != nil {
		return nil, err
	}
	return l.sent.Query()
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

// ListRecordsForOperator lists a collection's live records, newest change first, with the total:
// every one, or those holding the words of search (one word: as a substring), as record_search finds them.
func (s *Store) ListRecordsForOperator(ctx context.Context, c orchestrator.Collection, search string, limit, offset int) (int, []orchestrator.Record, error) {
	return s.QueryRecords(ctx, orchestrator.RecordQuery{Collections: map[string]string{c.ID: c.Name}, Search: search, Substring: orchestrator.SingleSearchToken(search),
		Desc: true, Limit: limit, Offset: offset, Count: true})
}
