// Package records holds the record tools (record_search, record_list, record_add, record_update,
// record_remove) over the typed collections the operator defines and grants.
package records

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Page limits of record_list and record_search.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Store is what the record tools need from the artifact store (postgres.Store implements it).
type Store interface {
	AgentCollections(ctx context.Context, orgID, guildID, agentID, name string) ([]orchestrator.ReachableCollection, error)
	QueryRecords(ctx context.Context, q orchestrator.RecordQuery) (int, []orchestrator.Record, error)
	CollectionStats(ctx context.Context, collectionID string) (int, *time.Time, error)
	AddRecord(ctx context.Context, c orchestrator.Collection, w orchestrator.RecordWrite, merge func(existing map[string]any) orchestrator.RecordWrite, now time.Time) (orchestrator.Record, bool, error)
	UpdateRecord(ctx context.Context, c orchestrator.Collection, id string, change func(current map[string]any) (orchestrator.RecordWrite, error), now time.Time) (orchestrator.Record, error)
	RemoveRecord(ctx context.Context, c orchestrator.Collection, id string, now time.Time) error
}

// Tools serves the record tools over a store.
type Tools struct {
	Store Store
	Now   func() time.Time
}

func (t *Tools) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

const whereHelp = `{column: term}, at most 8 terms. text: a string matches by substring or similar spelling, an array of strings matches exactly one of them; text[]: a string matches an item by substring or similar spelling; number and datetime: a value exactly, an array of values, or {"gte": x, "lte": y}; boolean and id: exactly; null: the column has no value`

// Register adds the five record tools to reg, in the records family.
func (t *Tools) Register(reg *registry.Registry) error {
	for _, tool := range []registry.Tool{
		{Name: "record_search", Description: "Search the records of the collections you may read: query is words in any column (web-search grammar: \"quoted phrase\", or, -word; a single word also matches inside words; never fuzzy). collection narrows to one collection, and where (only with collection) narrows further. Answers {records}, each with its collection and id.",
			Schema: json.RawMessage(searchSchema), Handler: t.search},
		{Name: "record_list", Description: "List the records of one collection, newest change first: where narrows (" + whereHelp + "); since lists changes after an ISO timestamp, oldest first; order sorts by a column, id, created_at or updated_at. Answers {total, records}; limit default 20, at most 100, offset pages.",
			Schema: json.RawMessage(listSchema), Handler: t.list},
		{Name: "record_add", Description: "Add a record to a collection: body holds the declared columns (required ones included). Every value is checked and every problem reported at once. When the collection's unique column matches a live record, the body is merged into that record instead. Answers {record}.",
			Schema: json.RawMessage(addSchema), Handler: t.add, Transactional: true},
		{Name: "record_update", Description: "Change a record: body holds only the columns that change; null clears an optional column. Answers {record, warnings?}.",
			Schema: json.RawMessage(updateSchema), Handler: t.update, Transactional: true},
		{Name: "record_remove", Description: "Remove a record by id. Answers {removed}.",
			Schema: json.RawMessage(removeSchema), Handler: t.remove, Transactional: true},
	} {
		tool.Family = orchestrator.FamilyRecords
		if err := reg.Register(tool); err != nil {
			return fmt.Errorf("register record tools: %w", err)
		}
	}
	return nil
}

const searchSchema = `{"type":"object","properties":{
"query":{"type":"string","description":"words to find in any column"},
"collection":{"type":"string","description":"only this collection"},
"where":{"type":"object","description":"column terms as in record_list; only with collection"},
"limit":{"type":"integer","description":"how many records, default 20, at most 100"}},
"required":["query"],"additionalProperties":false}`

const listSchema = `{"type":"object","properties":{
"collection":{"type":"string"},
"where":{"type":"object","description":"column: term, at most 8"},
"since":{"type":"string","description":"ISO timestamp: only records changed after it, oldest change first"},
"order":{"type":"object","properties":{"column":{"type":"string"},"direction":{"type":"string","enum":["asc","desc"]}},"required":["column"],"additionalProperties":false},
"limit":{"type":"integer","description":"default 20, at most 100"},
"offset":{"type":"integer","minimum":0}},
"required":["collection"],"additionalProperties":false}`

const addSchema = `{"type":"object","properties":{
"collection":{"type":"string"},
"body":{"type":"object","description":"column: value for the declared columns"}},
"required":["collection","body"],"additionalProperties":false}`

const updateSchema = `{"type":"object","properties":{
"collection":{"type":"string"},
"id":{"type":"string"},
"body":{"type":"object","description":"column: new value, only the columns that change; null clears an optional column"}},
"required":["collection","id","body"],"additionalProperties":false}`

const removeSchema = `{"type":"object","properties":{
"collection":{"type":"string"},
"id":{"type":"string"}},
"required":["collection","id"],"additionalProperties":false}`

// reach returns the collections the agent may read (name "" for all), and the access to each.
func (t *Tools) reach(ctx context.Context, c *registry.Call, name string) ([]orchestrator.ReachableCollection, error) {
	all, err := t.Store.AgentCollections(ctx, c.OrgID, c.GuildID, c.AgentID, name)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, rc := range all {
		if rc.Access(c.GuildID) != orchestrator.AccessNone {
			out = append(out, rc)
		}
	}
	return out, nil
}

// collection resolves a named collection with the access the call needs: ungranted is 404, a
// write on read is 403.
func (t *Tools) collection(ctx context.Context, c *registry.Call, name, need string) (orchestrator.Collection, error) {
	if strings.TrimSpace(name) == "" {
		return orchestrator.Collection{}, orchestrator.Errorf(orchestrator.EINVALID, "collection is empty; name one of the collections you may use (record_search without collection searches them all)")
	}
	found, err := t.reach(ctx, c, name)
	if err != nil {
		return orchestrator.Collection{}, err
	}
	if len(found) == 0 {
		all, err := t.reach(ctx, c, "")
		if err != nil {
			return orchestrator.Collection{}, err
		}
		names := make([]string, len(all))
		for i, rc := range all {
			names[i] = rc.Name
		}
		if len(names) == 0 {
			return orchestrator.Collection{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "collection %q not found (404); no collection is granted to you", name)
		}
		return orchestrator.Collection{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "collection %q not found (404); your collections are %s", name, strings.Join(names, ", "))
	}
	rc := found[0]
	if need == orchestrator.AccessWrite && rc.Access(c.GuildID) != orchestrator.AccessWrite {
		return orchestrator.Collection{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "collection %s is read-only for you (403); record_search and record_list still work", name)
	}
	return rc.Collection, nil
}

// rejected is the error of a body or query with problems.
func rejected(what string, problems []string) error {
	return orchestrator.Errorf(orchestrator.EINVALID, "%s rejected (422): %s", what, strings.Join(problems, "; "))
}

// answer encodes a tool answer without HTML escaping.
func answer(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode answer: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func setMeta(c *registry.Call, k string, v any) {
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	c.Meta[k] = v
}

// checkLimit reads limit (0: the default) and reports a problem above MaxLimit.
func checkLimit(limit int, problems *[]string) int {
	switch {
	case limit == 0:
		return DefaultLimit
	case limit < 0 || limit > MaxLimit:
		*problems = append(*problems, fmt.Sprintf("limit %d is out of range; use 1 to %d", limit, MaxLimit))
	}
	return limit
}

func (t *Tools) search(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Query      string          `json:"query"`
		Collection string          `json:"collection"`
		Where      json.RawMessage `json:"where"`
		Limit      int             `json:"limit"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("record_search arguments: %w", err)
	}
	var problems []string
	q := orchestrator.RecordQuery{Search: strings.TrimSpace(in.Query), Desc: true, Collections: map[string]string{}}
	q.Limit = checkLimit(in.Limit, &problems)
	if q.Search == "" {
		problems = append(problems, "query is empty; give words to find (record_list lists a collection without one)")
	}
	q.Substring = orchestrator.SingleSearchToken(q.Search)
	hasWhere := len(in.Where) > 0 && !isNull(in.Where)
	if hasWhere && in.Collection == "" {
		problems = append(problems, "where needs collection: name the collection its columns belong to")
	}
	if in.Collection != "" {
		coll, err := t.collection(ctx, c, in.Collection, orchestrator.AccessRead)
		if err != nil {
			return "", err
		}
		q.Collections[coll.ID] = coll.Name
		if hasWhere {
			var wp []string
			q.Where, wp = parseWhere(coll, in.Where)
			problems = append(problems, wp...)
		}
	} else {
		all, err := t.reach(ctx, c, "")
		if err != nil {
			return "", err
		}
		for _, rc := range all {
			q.Collections[rc.ID] = rc.Name
		}
	}
	if len(problems) > 0 {
		return "", rejected("search", problems)
	}
	if len(q.Collections) == 0 {
		return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "no collection is granted to you, so there is nothing to search (404)")
	}
	_, recs, err := t.Store.QueryRecords(ctx, q)
	if err != nil {
		return "", err
	}
	if recs == nil {
		recs = []orchestrator.Record{}
	}
	setMeta(c, "records", len(recs))
	return answer(map[string]any{"records": recs})
}

// Hint is what an empty narrowed record_list answers with: the collection's size, newest change and columns.
type Hint struct {
	Message      string     `json:"message"`
	Size         int        `json:"size"`
	NewestChange *time.Time `json:"newest_change"`
	Columns      []string   `json:"columns"`
}

func (t *Tools) list(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Collection string          `json:"collection"`
		Where      json.RawMessage `json:"where"`
		Since      string          `json:"since"`
		Order      *struct {
			Column    string `json:"column"`
			Direction string `json:"direction"`
		} `json:"order"`
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("record_list arguments: %w", err)
	}
	coll, err := t.collection(ctx, c, in.Collection, orchestrator.AccessRead)
	if err != nil {
		return "", err
	}
	q, problems := BuildList(coll, in.Where, in.Since, orderColumn(in.Order), orderDirection(in.Order), in.Limit, in.Offset)
	if len(problems) > 0 {
		return "", rejected("list", problems)
	}
	total, recs, err := t.Store.QueryRecords(ctx, q)
	if err != nil {
		return "", err
	}
	if recs == nil {
		recs = []orchestrator.Record{}
	}
	setMeta(c, "total", total)
	out := map[string]any{"total": total, "records": recs}
	if total == 0 && (len(q.Where) > 0 || q.Since != nil) {
		size, newest, err := t.Store.CollectionStats(ctx, coll.ID)
		if err != nil {
			return "", err
		}
		out["hint"] = Hint{Message: fmt.Sprintf("nothing matched; %s holds %d live records", coll.Name, size), Size: size, NewestChange: newest, Columns: coll.ColumnNames()}
	}
	return answer(out)
}

func orderColumn(o *struct {
	Column    string `json:"column"`
	Direction string `json:"direction"`
}) string {
	if o == nil {
		return ""
	}
	return o.Column
}

func orderDirection(o *struct {
	Column    string `json:"column"`
	Direction string `json:"direction"`
}) string {
	if o == nil {
		return ""
	}
	return o.Direction
}

// BuildList checks record_list's arguments against the collection and returns the query and every problem.
func BuildList(coll orchestrator.Collection, where json.RawMessage, since, orderBy, direction string, limit, offset int) (orchestrator.RecordQuery, []string) {
	var problems []string
	q := orchestrator.RecordQuery{Collections: map[string]string{coll.ID: coll.Name}, Count: true, Desc: true, Offset: offset}
	q.Limit = checkLimit(limit, &problems)
	if offset < 0 {
		problems = append(problems, fmt.Sprintf("offset %d is negative", offset))
	}
	if len(where) > 0 && !isNull(where) {
		var wp []string
		q.Where, wp = parseWhere(coll, where)
		problems = append(problems, wp...)
	}
	if since != "" {
		ts, ok := parseDatetime(since)
		if !ok {
			problems = append(problems, fmt.Sprintf("since %q is not an ISO timestamp such as 2026-03-01T09:30:00Z", since))
		} else {
			q.Since, q.Desc = &ts, false // oldest change first
		}
	}
	if orderBy != "" {
		switch orderBy {
		case "id", "created_at", "updated_at":
			q.OrderBy = orderBy
		default:
			col, ok := coll.Column(orderBy)
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("order: unknown column %q; order by a declared column (%s), id, created_at or updated_at", orderBy, strings.Join(coll.ColumnNames(), ", ")))
			case col.Type == orchestrator.ColTextList:
				problems = append(problems, fmt.Sprintf("order: %s is an array column and has no order; pick another column", orderBy))
			default:
				q.OrderBy, q.OrderType = orderBy, col.Type
			}
		}
		switch direction {
		case "", "asc":
			q.Desc = false
		case "desc":
			q.Desc = true
		default:
			problems = append(problems, fmt.Sprintf("order direction must be asc or desc, got %q", direction))
		}
	}
	return q, problems
}

func (t *Tools) add(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Collection string          `json:"collection"`
		Body       json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("record_add arguments: %w", err)
	}
	coll, err := t.collection(ctx, c, in.Collection, orchestrator.AccessWrite)
	if err != nil {
		return "", err
	}
	body, err := decodeObject(in.Body, "body")
	if err != nil {
		return "", err
	}
	set, _, problems := checkBody(coll, body, true)
	if len(problems) > 0 {
		return "", rejected("record", problems)
	}
	merge := func(existing map[string]any) orchestrator.RecordWrite {
		data := make(map[string]any, len(existing)+len(set))
		for k, v := range existing {
			data[k] = v
		}
		for k, v := range set {
			data[k] = v
		}
		return write(coll, data)
	}
	rec, merged, err := t.Store.AddRecord(ctx, coll, write(coll, set), merge, t.now())
	if err != nil {
		return "", err
	}
	setMeta(c, "record_id", rec.ID)
	out := map[string]any{"record": rec}
	if merged {
		out["note"] = "merged into existing record " + rec.ID
		setMeta(c, "merged", true)
	}
	return answer(out)
}

func (t *Tools) update(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Collection string          `json:"collection"`
		ID         string          `json:"id"`
		Body       json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("record_update arguments: %w", err)
	}
	coll, err := t.collection(ctx, c, in.Collection, orchestrator.AccessWrite)
	if err != nil {
		return "", err
	}
	body, err := decodeObject(in.Body, "body")
	if err != nil {
		return "", err
	}
	set, clear, problems := checkBody(coll, body, false)
	if len(body) == 0 {
		problems = append(problems, "body is empty; give the columns that change")
	}
	if len(problems) > 0 {
		return "", rejected("update", problems)
	}
	var warnings []string
	rec, err := t.Store.UpdateRecord(ctx, coll, in.ID, func(cur map[string]any) (orchestrator.RecordWrite, error) {
		warnings = warnings[:0]
		data := make(map[string]any, len(cur)+len(set))
		for k, v := range cur {
			data[k] = v
		}
		for _, k := range sortedKeys(set) {
			if old, ok := cur[k]; ok && equalValue(old, set[k]) {
				warnings = append(warnings, fmt.Sprintf("%s already had this value; nothing changed there", k))
			}
			data[k] = set[k]
		}
		for _, k := range clear {
			if _, ok := cur[k]; !ok {
				warnings = append(warnings, fmt.Sprintf("%s had no value to clear", k))
			}
			delete(data, k)
		}
		return write(coll, data), nil
	}, t.now())
	if err != nil {
		return "", err
	}
	setMeta(c, "record_id", rec.ID)
	out := map[string]any{"record": rec}
	if len(warnings) > 0 {
		sort.Strings(warnings)
		out["warnings"] = warnings
	}
	return answer(out)
}

func (t *Tools) remove(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Collection string `json:"collection"`
		ID         string `json:"id"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("record_remove arguments: %w", err)
	}
	coll, err := t.collection(ctx, c, in.Collection, orchestrator.AccessWrite)
	if err != nil {
		return "", err
	}
	if err := t.Store.RemoveRecord(ctx, coll, in.ID, t.now()); err != nil {
		return "", err
	}
	setMeta(c, "record_id", in.ID)
	return answer(map[string]any{"removed": in.ID})
}
