package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Artifact kinds: notes, memory, scripts and collections share one artifact store.
const (
	ArtifactNote       = "note"
	ArtifactMemory     = "memory"
	ArtifactScript     = "script"
	ArtifactCollection = "collection"
)

// Artifact levels: the scope that owns an artifact.
const (
	LevelOrg   = "org"
	LevelGuild = "guild"
	LevelAgent = "agent"
)

// Levels lists the artifact levels from the widest to the narrowest.
var Levels = []string{LevelOrg, LevelGuild, LevelAgent}

// MemoryMaxChars is the most characters an agent's memory may hold.
const MemoryMaxChars = 12000

// MemoryRevisionsKept is how many earlier versions of an agent's memory are kept.
const MemoryRevisionsKept = 50

// PrefixArtifact and PrefixRecord are the id prefixes of artifacts and records.
const (
	PrefixArtifact = "art"
	PrefixRecord   = "rec"
)

// Artifact is one row of the artifact store: a note, an agent's memory, a script or a collection.
type Artifact struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Level     string    `json:"level"`
	OrgID     string    `json:"org_id"`
	GuildID   string    `json:"guild_id,omitempty"`
	AgentID   string    `json:"agent_id,omitempty"`
	Key       string    `json:"key"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Path is the display path of a note: its level, a slash, and its key (e.g. guild/plan.md).
func (a Artifact) Path() string { return a.Level + "/" + a.Key }

// MemoryRevision is an earlier version of an agent's memory.
type MemoryRevision struct {
	ID         int64     `json:"id"`
	AgentID    string    `json:"agent_id"`
	Content    string    `json:"content"`
	WrittenAt  time.Time `json:"written_at"`  // when this version was written
	ArchivedAt time.Time `json:"archived_at"` // when a newer version replaced it
}

// Column types of a collection.
const (
	ColText     = "text"
	ColNumber   = "number"
	ColDatetime = "datetime"
	ColBoolean  = "boolean"
	ColID       = "id"
	ColTextList = "text[]"
)

// ColumnTypes lists the column types a collection may declare.
var ColumnTypes = []string{ColText, ColNumber, ColDatetime, ColBoolean, ColID, ColTextList}

// Collection access levels of a grant.
const (
	AccessNone  = "none"
	AccessRead  = "read"
	AccessWrite = "write"
)

// Column is one declared column of a collection.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Unique   bool   `json:"unique"`
}

// Collection is a typed table the operator defines: an organisation table or a guild's own table.
type Collection struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Level     string            `json:"level"` // org or guild
	OrgID     string            `json:"org_id"`
	GuildID   string            `json:"guild_id,omitempty"`
	Columns   []Column          `json:"columns"`
	Grants    []CollectionGrant `json:"grants,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// Column returns the declared column named name.
func (c Collection) Column(name string) (Column, bool) {
	for _, col := range c.Columns {
		if col.Name == name {
			return col, true
		}
	}
	return Column{}, false
}

// UniqueColumn returns the collection's unique column, if it declares one.
func (c Collection) UniqueColumn() (Column, bool) {
	for _, col := range c.Columns {
		if col.Unique {
			return col, true
		}
	}
	return Column{}, false
}

// ColumnNames lists the declared columns as "name (type)" for messages and hints.
func (c Collection) ColumnNames() []string {
	out := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		out[i] = col.Name + " (" + col.Type + ")"
	}
	return out
}

// CollectionGrant is one grant row: an agent's own access, or a guild's access to an organisation table.
type CollectionGrant struct {
	CollectionID string    `json:"collection_id"`
	AgentID      string    `json:"agent_id,omitempty"`
	GuildID      string    `json:"guild_id,omitempty"`
	Access       string    `json:"access"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Record is one live or removed row of a collection.
type Record struct {
	ID         string
	Collection string // the collection's name
	Data       map[string]any
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// MarshalJSON writes the record flat: id, collection, its columns in name order, created_at, updated_at.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	field := func(k string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	b.WriteByte('{')
	if err := field("id", r.ID); err != nil {
		return nil, err
	}
	if err := field("collection", r.Collection); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(r.Data))
	for k := range r.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := field(k, r.Data[k]); err != nil {
			return nil, fmt.Errorf("record %s column %s: %w", r.ID, k, err)
		}
	}
	if err := field("created_at", r.CreatedAt); err != nil {
		return nil, err
	}
	if err := field("updated_at", r.UpdatedAt); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// nameOfColumn and nameOfCollection are the forms of column and collection names.
var (
	nameOfColumn     = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	nameOfCollection = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
)

// reservedColumns are names a record carries itself.
var reservedColumns = map[string]bool{"id": true, "collection": true, "created_at": true, "updated_at": true, "deleted_at": true}

// MaxColumns is the most columns a collection may declare.
const MaxColumns = 64

// ValidateCollection checks a collection definition and reports every problem at once.
func ValidateCollection(name string, cols []Column) error {
	var problems []string
	if !nameOfCollection.MatchString(name) {
		problems = append(problems, fmt.Sprintf("name %q must match %s (a lower-case letter, then lower-case letters, digits, _ or -), e.g. %s", name, nameOfCollection, SuggestCollectionName(name)))
	}
	if len(cols) == 0 {
		problems = append(problems, "columns is empty; declare at least one column")
	}
	if len(cols) > MaxColumns {
		problems = append(problems, fmt.Sprintf("%d columns; at most %d", len(cols), MaxColumns))
	}
	seen := map[string]bool{}
	var unique []string
	for i, c := range cols {
		switch {
		case !nameOfColumn.MatchString(c.Name):
			problems = append(problems, fmt.Sprintf("columns[%d]: name %q must match %s, e.g. %s", i, c.Name, nameOfColumn, SuggestColumnName(c.Name)))
		case reservedColumns[c.Name]:
			problems = append(problems, fmt.Sprintf("columns[%d]: name %q is reserved (every record has id, collection, created_at and updated_at), e.g. %s", i, c.Name, SuggestColumnName(c.Name)))
		case seen[c.Name]:
			problems = append(problems, fmt.Sprintf("columns[%d]: %q is declared twice", i, c.Name))
		}
		seen[c.Name] = true
		if !validColumnType(c.Type) {
			problems = append(problems, fmt.Sprintf("columns[%d] (%s): type %q is not one of %s", i, c.Name, c.Type, strings.Join(ColumnTypes, ", ")))
		}
		if c.Unique {
			unique = append(unique, c.Name)
			if c.Type == ColBoolean || c.Type == ColTextList {
				problems = append(problems, fmt.Sprintf("columns[%d] (%s): a %s column cannot be unique; use text, number, datetime or id", i, c.Name, c.Type))
			}
		}
	}
	if len(unique) > 1 {
		problems = append(problems, fmt.Sprintf("at most one column may be unique, got %s", strings.Join(unique, ", ")))
	}
	if len(problems) > 0 {
		return Errorf(EINVALID, "collection rejected: %s", strings.Join(problems, "; "))
	}
	return nil
}

// SuggestCollectionName turns a refused collection name into a valid one: lower case, every other
// character an underscore, starting at its first letter, at most 63 characters.
func SuggestCollectionName(name string) string {
	return suggestIdent(name, "-", "items")
}

// SuggestColumnName turns a refused column name into a valid one that is not reserved.
func SuggestColumnName(name string) string {
	n := suggestIdent(name, "", "value")
	if reservedColumns[n] {
		n = "my_" + n
	}
	return n
}

// suggestIdent keeps lower-case letters, digits, _ and the characters of extra, makes every other
// character an underscore, drops what comes before the first letter, clips at 63 characters, and
// answers empty when nothing is left.
func suggestIdent(name, extra, empty string) string {
	n := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || strings.ContainsRune(extra, r) {
			return r
		}
		return '_'
	}, strings.ToLower(name))
	n = strings.TrimLeftFunc(n, func(r rune) bool { return r < 'a' || r > 'z' })
	if len(n) > 63 {
		n = n[:63]
	}
	if n == "" {
		return empty
	}
	return n
}

func validColumnType(t string) bool {
	for _, ct := range ColumnTypes {
		if ct == t {
			return true
		}
	}
	return false
}

// SingleSearchToken reports whether a search is one word without websearch operators: a record or
// note search matches it as a substring.
func SingleSearchToken(q string) bool {
	return q != "" && !strings.ContainsAny(q, " \t\n\"") && !strings.HasPrefix(q, "-")
}

// ValidAccess reports whether a is none, read or write.
func ValidAccess(a string) bool { return a == AccessNone || a == AccessRead || a == AccessWrite }

// Record filter operations: how one where term narrows a record query.
const (
	FilterMatch = "match" // text, or an item of a text[] column: substring or similar spelling
	FilterIn    = "in"    // the column holds one of Values exactly
	FilterRange = "range" // number or datetime between Gte and Lte, each optional
	FilterNull  = "null"  // the column has no value
)

// RecordFilter is one checked where term of a record query. Values, Gte and Lte are normalised
// the way values are stored (numbers as float64, datetimes as DatetimeLayout strings in UTC).
type RecordFilter struct {
	Column   string
	Type     string // the column's type
	Op       string
	Text     string
	Values   []any
	Gte, Lte any
	Spelling map[string][]string // match terms: each word of Text with the collection's words spelled like it (the store's lookup)
	// Narrow holds groups of index lexemes (the store's lookup): a record the term matches holds one
	// lexeme of each group, so the index finds its candidates. No group: the term does not narrow.
	Narrow [][]string
}

// RecordQuery is a checked record_list or record_search query over one or more collections.
type RecordQuery struct {
	Collections map[string]string // id → name of the collections searched
	Search      string            // words in any column, websearch grammar
	Substring   bool              // Search is a single token matched as a substring
	Where       []RecordFilter
	Since       *time.Time // only records changed after this time
	OrderBy     string     // a declared column, id, created_at or updated_at; "" is updated_at
	OrderType   string     // the declared column's type, "" for the built-in columns
	Desc        bool
	Limit       int
	Offset      int
	Count       bool // also count every match (record_list's total)
}

// DatetimeLayout is how datetime values are stored: UTC with microseconds, so text order is time order.
const DatetimeLayout = "2006-01-02T15:04:05.000000Z"

// ReachableCollection is a collection an agent may name, with the grant rows that decide its access.
type ReachableCollection struct {
	Collection
	AgentAccess string // the agent's own grant row; "" when it has none
	GuildAccess string // the agent's guild's grant row; "" when it has none
}

// Access is what the grants give an agent of guild agentGuildID on the collection: the agent's own
// row when it has one (none keeps it out); otherwise its guild's read or write on an organisation
// table; otherwise write on the agent's guild's own table; otherwise none.
func (rc ReachableCollection) Access(agentGuildID string) string {
	switch {
	case rc.AgentAccess != "":
		return rc.AgentAccess
	case rc.Level == LevelOrg && (rc.GuildAccess == AccessRead || rc.GuildAccess == AccessWrite):
		return rc.GuildAccess
	case rc.Level == LevelGuild && rc.GuildID == agentGuildID:
		return AccessWrite
	}
	return AccessNone
}

// RecordWrite is a checked record body ready to store.
type RecordWrite struct {
	Data        map[string]any // the record's values after the write
	SearchText  string         // every value's words, for search
	UniqueValue *string        // the unique column's value; nil when the collection has none or it is empty
	Words       []string       // the distinct words of its text values, sorted: the vocabulary of similar spelling
}

// SpellingWords returns the distinct lower-case words of s that similar spelling can match: runs of
// letters and digits of 3 to 64 bytes holding at least one letter, sorted.
func SpellingWords(s string) []string {
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 3 && len(w) <= 64 && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			seen[w] = true
		}
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// TermTokens returns the words of a where term, lower-case, in order, without repeats, at most 4.
func TermTokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !slices.Contains(out, w) && len(out) < 4 {
			out = append(out, w)
		}
	}
	return out
}
