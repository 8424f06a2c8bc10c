// Package notes holds the note tools (note_find, note_get, note_write, note_delete): Markdown notes of
// the artifact store at agent, guild and organisation level, reached through the four artifact grants.
package notes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Find limits: how many notes note_find lists by default and at most.
const (
	DefaultFindLimit = 20
	MaxFindLimit     = 50
)

// Store is what the note tools need from the artifact store (postgres.Store implements it).
type Store interface {
	ArtifactGrantBindings(ctx context.Context, orgID, guildID, agentID string) ([]orchestrator.Binding, error)
	FindNotes(ctx context.Context, orgID, guildID, agentID, query string, substring bool, limit int) ([]orchestrator.Artifact, error)
	GetNote(ctx context.Context, level, owner, key string) (orchestrator.Artifact, error)
	PutNote(ctx context.Context, a orchestrator.Artifact, now time.Time) (orchestrator.Artifact, bool, error)
	DeleteNote(ctx context.Context, level, owner, key string) error
}

// Tools serves the note tools over a store.
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

// Register adds the four note tools to reg, in the notes family.
func (t *Tools) Register(reg *registry.Registry) error {
	for _, tool := range []registry.Tool{
		{Name: "note_find", Description: "Search or list the Markdown notes you may read: your own (agent), your guild's and your organisation's. Without query, lists the newest first. query uses web-search grammar (\"quoted phrase\", or, -word); a single word also matches inside words. Answers display paths such as guild/plan.md for note_get.",
			Schema: json.RawMessage(findSchema), Handler: t.find},
		{Name: "note_get", Description: "Read one note by its display path, level/key (for example agent/todo.md, guild/plan.md, org/policy.md).",
			Schema: json.RawMessage(getSchema), Handler: t.get},
		{Name: "note_write", Description: "Write a Markdown note, replacing the note with the same level and key. level is agent (yours), guild (shared with your guild) or org (shared with the organisation). key is the .md file name; notes have no folders.",
			Schema: json.RawMessage(writeSchema), Handler: t.write, Transactional: true},
		{Name: "note_delete", Description: "Delete one note by its display path, level/key.",
			Schema: json.RawMessage(deleteSchema), Handler: t.delete, Transactional: true},
	} {
		tool.Family = orchestrator.FamilyNotes
		if err := reg.Register(tool); err != nil {
			return fmt.Errorf("register note tools: %w", err)
		}
	}
	return nil
}

const findSchema = `{"type":"object","properties":{
"query":{"type":"string","description":"words to find, web-search grammar; omit to list"},
"level":{"type":"string","enum":["agent","guild","org"],"description":"only notes at this level"},
"limit":{"type":"integer","minimum":1,"maximum":50,"description":"how many notes, default 20"}},
"additionalProperties":false}`

const getSchema = `{"type":"object","properties":{
"path":{"type":"string","description":"display path level/key, e.g. guild/plan.md"}},
"required":["path"],"additionalProperties":false}`

const writeSchema = `{"type":"object","properties":{
"level":{"type":"string","enum":["agent","guild","org"]},
"key":{"type":"string","description":"file name ending in .md, no slashes"},
"content":{"type":"string","description":"the whole note, Markdown"}},
"required":["level","key","content"],"additionalProperties":false}`

const deleteSchema = `{"type":"object","properties":{
"path":{"type":"string","description":"display path level/key, e.g. agent/scratch.md"}},
"required":["path"],"additionalProperties":false}`

// reach reads the agent's artifact grants and resolves them.
func (t *Tools) reach(ctx context.Context, c *registry.Call) (Grants, error) {
	rows, err := t.Store.ArtifactGrantBindings(ctx, c.OrgID, c.GuildID, c.AgentID)
	if err != nil {
		return Grants{}, err
	}
	return Resolve(rows), nil
}

// owner is the id of the scope owning notes at level for the calling agent.
func owner(c *registry.Call, level string) string {
	switch level {
	case orchestrator.LevelOrg:
		return c.OrgID
	case orchestrator.LevelGuild:
		return c.GuildID
	}
	return c.AgentID
}

func (t *Tools) find(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Query string `json:"query"`
		Level string `json:"level"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("note_find arguments: %w", err)
	}
	g, err := t.reach(ctx, c)
	if err != nil {
		return "", err
	}
	orgID, guildID, agentID := "", "", c.AgentID
	if g.ReadOrg {
		orgID = c.OrgID
	}
	if g.ReadGuild {
		guildID = c.GuildID
	}
	switch in.Level {
	case orchestrator.LevelAgent:
		orgID, guildID = "", ""
	case orchestrator.LevelGuild:
		if !g.ReadGuild {
			return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "guild notes are not readable for you (the read_guild grant is off); search level agent or org instead")
		}
		orgID, agentID = "", ""
	case orchestrator.LevelOrg:
		if !g.ReadOrg {
			return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "organisation notes are not readable for you (the read_org grant is off); search level agent or guild instead")
		}
		guildID, agentID = "", ""
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultFindLimit
	}
	query := strings.TrimSpace(in.Query)
	single := orchestrator.SingleSearchToken(query)
	found, err := t.Store.FindNotes(ctx, orgID, guildID, agentID, query, single, limit)
	if err != nil {
		return "", err
	}
	setMeta(c, "matches", len(found))
	var b strings.Builder
	switch {
	case len(found) == 0 && query != "":
		fmt.Fprintf(&b, "no note matches %q; call note_find without query to list the notes you may read", query)
		return b.String(), nil
	case len(found) == 0:
		return "no notes yet; note_write creates one", nil
	}
	fmt.Fprintf(&b, "%d note%s, newest change first:\n", len(found), plural(len(found)))
	for _, n := range found {
		fmt.Fprintf(&b, "%s · %d chars · updated %s\n", n.Path(), utf8.RuneCountInString(n.Content), n.UpdatedAt.Format(time.RFC3339))
		if line := snippet(n.Content, query); line != "" {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	if len(found) == limit {
		fmt.Fprintf(&b, "(limit %d reached: narrow the query or the level to see others)\n", limit)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func (t *Tools) get(ctx context.Context, c *registry.Call) (string, error) {
	path, level, key, err := t.addressed(ctx, c, "note_get", false)
	if err != nil {
		return "", err
	}
	n, err := t.Store.GetNote(ctx, level, owner(c, level), key)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "no note %s; note_find lists the notes you may read", path)
	}
	if err != nil {
		return "", err
	}
	setMeta(c, "path", n.Path())
	return fmt.Sprintf("%s · updated %s\n\n%s", n.Path(), n.UpdatedAt.Format(time.RFC3339), n.Content), nil
}

func (t *Tools) write(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Level   string `json:"level"`
		Key     string `json:"key"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("note_write arguments: %w", err)
	}
	var problems []string
	if !validLevel(in.Level) {
		problems = append(problems, fmt.Sprintf("level must be agent, guild or org, got %q", in.Level))
	}
	problems = append(problems, orchestrator.NoteProblems(in.Key, in.Content)...)
	if len(problems) > 0 {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "note not written: %s", strings.Join(problems, "; "))
	}
	g, err := t.reach(ctx, c)
	if err != nil {
		return "", err
	}
	if err := g.CanWrite(in.Level); err != nil {
		return "", err
	}
	a := orchestrator.Artifact{Kind: orchestrator.ArtifactNote, Level: in.Level, OrgID: c.OrgID, Key: in.Key, Content: in.Content}
	if in.Level != orchestrator.LevelOrg {
		a.GuildID = c.GuildID
	}
	if in.Level == orchestrator.LevelAgent {
		a.AgentID = c.AgentID
	}
	n, created, err := t.Store.PutNote(ctx, a, t.now())
	if err != nil {
		return "", err
	}
	setMeta(c, "path", n.Path())
	verb := "replaced"
	if created {
		verb = "created"
	}
	return fmt.Sprintf("wrote %s (%s, %d chars)", n.Path(), verb, utf8.RuneCountInString(n.Content)), nil
}

func (t *Tools) delete(ctx context.Context, c *registry.Call) (string, error) {
	path, level, key, err := t.addressed(ctx, c, "note_delete", true)
	if err != nil {
		return "", err
	}
	if err := t.Store.DeleteNote(ctx, level, owner(c, level), key); err != nil {
		if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
			return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "no note %s; note_find lists the notes you may read", path)
		}
		return "", err
	}
	setMeta(c, "path", path)
	return "deleted " + path, nil
}

// addressed decodes the display path argument of note_get or note_delete and checks that the
// agent may read (or, with write, write) notes at its level.
func (t *Tools) addressed(ctx context.Context, c *registry.Call, tool string, write bool) (path, level, key string, err error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", "", "", fmt.Errorf("%s arguments: %w", tool, err)
	}
	if level, key, err = ParsePath(in.Path); err != nil {
		return "", "", "", err
	}
	g, err := t.reach(ctx, c)
	if err != nil {
		return "", "", "", err
	}
	check := g.CanRead
	if write {
		check = g.CanWrite
	}
	if err := check(level); err != nil {
		return "", "", "", err
	}
	return in.Path, level, key, nil
}

func validLevel(l string) bool {
	return l == orchestrator.LevelAgent || l == orchestrator.LevelGuild || l == orchestrator.LevelOrg
}

// ParsePath splits a display path level/key and checks both parts.
func ParsePath(p string) (level, key string, err error) {
	level, key, ok := strings.Cut(p, "/")
	if !ok || !validLevel(level) {
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "path %q must be level/key with level agent, guild or org, e.g. guild/plan.md", p)
	}
	if err := orchestrator.ValidNoteKey(key); err != nil {
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "path %q: %v", p, err)
	}
	return level, key, nil
}

// snippet returns the first line of content holding a query word, else its first non-empty line,
// clipped to 160 characters.
func snippet(content, query string) string {
	lines := strings.Split(content, "\n")
	pick := ""
	words := strings.Fields(strings.ToLower(strings.NewReplacer(`"`, " ").Replace(query)))
	for _, l := range lines {
		ll := strings.ToLower(l)
		for _, w := range words {
			if w != "or" && !strings.HasPrefix(w, "-") && strings.Contains(ll, w) {
				pick = l
				break
			}
		}
		if pick != "" {
			break
		}
	}
	if pick == "" {
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				pick = l
				break
			}
		}
	}
	pick = strings.TrimSpace(pick)
	if utf8.RuneCountInString(pick) > 160 {
		pick = string([]rune(pick)[:160]) + "…"
	}
	return pick
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// setMeta records a metadata field of the call.
func setMeta(c *registry.Call, k string, v any) {
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	c.Meta[k] = v
}
