package httpapi

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// ArtifactStore is what the operator's artifact endpoints read and write: collections and their
// grants and records, notes, and an agent's memory (postgres.Store implements it).
type ArtifactStore interface {
	CreateCollection(ctx context.Context, c orchestrator.Collection) (orchestrator.Collection, error)
	ListCollections(ctx context.Context, level, owner string) ([]orchestrator.Collection, error)
	GetCollection(ctx context.Context, id string) (orchestrator.Collection, error)
	PutCollectionGrant(ctx context.Context, g orchestrator.CollectionGrant) (orchestrator.CollectionGrant, error)
	ListRecordsForOperator(ctx context.Context, c orchestrator.Collection, search string, limit, offset int) (int, []orchestrator.Record, error)
	ListNotes(ctx context.Context, level, owner string) ([]orchestrator.Artifact, error)
	GetNoteByID(ctx context.Context, id string) (orchestrator.Artifact, error)
	GetMemory(ctx context.Context, agentID string) (orchestrator.Artifact, error)
	ListMemoryRevisions(ctx context.Context, agentID string) ([]orchestrator.MemoryRevision, error)
	PutNote(ctx context.Context, a orchestrator.Artifact, now time.Time) (orchestrator.Artifact, bool, error)
	WriteMemory(ctx context.Context, agent orchestrator.Agent, content string, now time.Time) (orchestrator.Artifact, bool, error)
}

// artifactRoutes registers the collection, record, note and memory routes.
func (s *Server) artifactRoutes(api fiber.Router) {
	org, guild, agent, art := orchestrator.ObjectOrg, orchestrator.ObjectGuild, orchestrator.ObjectAgent, orchestrator.ObjectArtifact
	g := s.serving(api, s.Artifacts != nil, "the artifact store")
	g.add("POST", "/orgs/:id/collections", "createCollectionOrg", write(org), s.createCollection(orchestrator.LevelOrg))
	g.add("GET", "/orgs/:id/collections", "listCollectionsOrg", read(org), s.listCollections(orchestrator.LevelOrg))
	g.add("POST", "/guilds/:id/collections", "createCollectionGuild", write(guild), s.createCollection(orchestrator.LevelGuild))
	g.add("GET", "/guilds/:id/collections", "listCollectionsGuild", read(guild), s.listCollections(orchestrator.LevelGuild))
	// A guild role never covers its organisation's own tables and notes (only the guild's and its
	// agents'), so reads of a collection or a note are decided at its own scope.
	g.add("GET", "/collections/:id", "getCollection", read(art), s.getCollection)
	g.add("PUT", "/collections/:id/grants", "putCollectionGrant", write(art), s.putCollectionGrant)
	g.add("GET", "/collections/:id/records", "listCollectionRecords", read(art), s.listRecords)
	g.add("GET", "/orgs/:id/notes", "listNotesOrg", read(org), s.listNotes(orchestrator.LevelOrg))
	g.add("GET", "/guilds/:id/notes", "listNotesGuild", read(guild), s.listNotes(orchestrator.LevelGuild))
	g.add("GET", "/agents/:id/notes", "listNotesAgent", read(agent), s.listNotes(orchestrator.LevelAgent))
	g.add("GET", "/notes/:id", "getNote", read(art), s.getNote)
	g.add("PUT", "/orgs/:id/notes/:key", "putNoteOrg", write(org), s.putNote(orchestrator.LevelOrg))
	g.add("PUT", "/guilds/:id/notes/:key", "putNoteGuild", write(guild), s.putNote(orchestrator.LevelGuild))
	g.add("PUT", "/agents/:id/notes/:key", "putNoteAgent", write(agent), s.putNote(orchestrator.LevelAgent))
	g.add("GET", "/agents/:id/memory", "getAgentMemory", read(agent), s.getMemory)
	g.add("PUT", "/agents/:id/memory", "putAgentMemory", write(agent), s.putMemory)
	g.add("GET", "/agents/:id/memory/revisions", "listAgentMemoryRevisions", read(agent), s.listMemoryRevisions)
}

// owner checks that the organisation, guild or agent named by the route exists and returns its chain.
func (s *Server) owner(c *fiber.Ctx, level string) (orchestrator.Chain, error) {
	id := c.Params("id")
	ctx := c.UserContext()
	switch level {
	case orchestrator.LevelOrg:
		if err := requireID("organisation", id); err != nil {
			return orchestrator.Chain{}, err
		}
		o, err := s.Scopes.GetOrg(ctx, id)
		return orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: o.ID}, err
	case orchestrator.LevelGuild:
		if err := requireID("guild", id); err != nil {
			return orchestrator.Chain{}, err
		}
		g, err := s.Scopes.GetGuild(ctx, id)
		return orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: g.OrgID, GuildID: g.ID}, err
	}
	if err := requireID("agent", id); err != nil {
		return orchestrator.Chain{}, err
	}
	a, err := s.Scopes.GetAgent(ctx, id)
	return orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: a.OrgID, GuildID: a.GuildID, AgentID: a.ID}, err
}

// collectionBody is POST /api/{orgs,guilds}/{id}/collections.
type collectionBody struct {
	Name    string                `json:"name"`
	Columns []orchestrator.Column `json:"columns"`
}

func (s *Server) createCollection(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		store := s.Artifacts
		var b collectionBody
		if err := decode(c, &b); err != nil {
			return err
		}
		ch, err := s.owner(c, level)
		if err != nil {
			return err
		}
		if err := orchestrator.ValidateCollection(b.Name, b.Columns); err != nil {
			return err
		}
		coll := orchestrator.Collection{Name: b.Name, Level: level, OrgID: ch.OrgID, GuildID: ch.GuildID, Columns: b.Columns, CreatedAt: s.now()}
		coll, err = store.CreateCollection(c.UserContext(), coll)
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusCreated).JSON(coll)
	}
}

func (s *Server) listCollections(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		store := s.Artifacts
		ch, err := s.owner(c, level)
		if err != nil {
			return err
		}
		cs, err := store.ListCollections(c.UserContext(), level, ch.ID())
		if err != nil {
			return err
		}
		if cs == nil {
			cs = []orchestrator.Collection{}
		}
		return c.JSON(fiber.Map{"collections": cs})
	}
}

func (s *Server) collection(c *fiber.Ctx) (ArtifactStore, orchestrator.Collection, error) {
	store := s.Artifacts
	if err := requireID("collection", c.Params("id")); err != nil {
		return nil, orchestrator.Collection{}, err
	}
	coll, err := store.GetCollection(c.UserContext(), c.Params("id"))
	return store, coll, err
}

func (s *Server) getCollection(c *fiber.Ctx) error {
	_, coll, err := s.collection(c)
	if err != nil {
		return err
	}
	return c.JSON(coll)
}

// grantBody is PUT /api/collections/{id}/grants.
type grantBody struct {
	AgentID string `json:"agent_id"`
	GuildID string `json:"guild_id"`
	Access  string `json:"access"`
}

func (s *Server) putCollectionGrant(c *fiber.Ctx) error {
	var b grantBody
	if err := decode(c, &b); err != nil {
		return err
	}
	store, coll, err := s.collection(c)
	if err != nil {
		return err
	}
	if !orchestrator.ValidAccess(b.Access) {
		return orchestrator.Errorf(orchestrator.EINVALID, "access must be none, read or write, got %q", b.Access)
	}
	ctx := c.UserContext()
	g := orchestrator.CollectionGrant{CollectionID: coll.ID, Access: b.Access, UpdatedAt: s.now()}
	switch {
	case (b.AgentID == "") == (b.GuildID == ""):
		return orchestrator.Errorf(orchestrator.EINVALID, "give exactly one of agent_id (an agent's own grant) or guild_id (a guild's grant on an organisation table)")
	case b.AgentID != "":
		if err := requireID("agent", b.AgentID); err != nil {
			return err
		}
		a, err := s.Scopes.GetAgent(ctx, b.AgentID)
		if err != nil {
			return err
		}
		if a.OrgID != coll.OrgID || (coll.Level == orchestrator.LevelGuild && a.GuildID != coll.GuildID) {
			return orchestrator.Errorf(orchestrator.EINVALID, "agent %s cannot reach collection %s: it belongs to %s; grant an agent of that %s", a.ID, coll.Name, ownerName(coll), coll.Level)
		}
		g.AgentID = a.ID
	default:
		if err := requireID("guild", b.GuildID); err != nil {
			return err
		}
		if coll.Level != orchestrator.LevelOrg {
			return orchestrator.Errorf(orchestrator.EINVALID, "collection %s is guild %s's own table, which its agents already write; guild grants apply to organisation tables, and agent_id grants narrow one agent", coll.Name, coll.GuildID)
		}
		gu, err := s.Scopes.GetGuild(ctx, b.GuildID)
		if err != nil {
			return err
		}
		if gu.OrgID != coll.OrgID {
			return orchestrator.Errorf(orchestrator.EINVALID, "guild %s is not in organisation %s, which owns collection %s", gu.ID, coll.OrgID, coll.Name)
		}
		g.GuildID = gu.ID
	}
	if _, err := store.PutCollectionGrant(ctx, g); err != nil {
		return err
	}
	coll, err = store.GetCollection(ctx, coll.ID)
	if err != nil {
		return err
	}
	return c.JSON(coll)
}

func ownerName(c orchestrator.Collection) string {
	if c.Level == orchestrator.LevelGuild {
		return "guild " + c.GuildID
	}
	return "organisation " + c.OrgID
}

// queryInt reads an optional non-negative integer query parameter with a default and a maximum.
func queryInt(c *fiber.Ctx, name string, def, maxV int) (int, error) {
	raw := c.Query(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > maxV {
		return 0, orchestrator.Errorf(orchestrator.EINVALID, "query parameter %s must be an integer from 0 to %d, got %q", name, maxV, raw)
	}
	return n, nil
}

// maxRecordSearch is the longest search GET /api/collections/{id}/records takes.
const maxRecordSearch = 500

func (s *Server) listRecords(c *fiber.Ctx) error {
	store, coll, err := s.collection(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 50, 500)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "offset", 0, 1<<30)
	if err != nil {
		return err
	}
	q := strings.TrimSpace(c.Query("q"))
	if n := utf8.RuneCountInString(q); n > maxRecordSearch {
		return orchestrator.Errorf(orchestrator.EINVALID, "query parameter q is %d characters; at most %d", n, maxRecordSearch)
	}
	total, recs, err := store.ListRecordsForOperator(c.UserContext(), coll, q, limit, offset)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []orchestrator.Record{}
	}
	return c.JSON(fiber.Map{"total": total, "records": recs})
}

// noteView is a note in a listing: everything but its content.
type noteView struct {
	ID        string    `json:"id"`
	Path      string    `json:"path"`
	Level     string    `json:"level"`
	Key       string    `json:"key"`
	OrgID     string    `json:"org_id"`
	GuildID   string    `json:"guild_id,omitempty"`
	AgentID   string    `json:"agent_id,omitempty"`
	Chars     int       `json:"chars"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Server) listNotes(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		store := s.Artifacts
		ch, err := s.owner(c, level)
		if err != nil {
			return err
		}
		ns, err := store.ListNotes(c.UserContext(), level, ch.ID())
		if err != nil {
			return err
		}
		out := make([]noteView, len(ns))
		for i, n := range ns {
			out[i] = noteView{ID: n.ID, Path: n.Path(), Level: n.Level, Key: n.Key, OrgID: n.OrgID, GuildID: n.GuildID, AgentID: n.AgentID,
				Chars: utf8.RuneCountInString(n.Content), CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
		}
		return c.JSON(fiber.Map{"notes": out})
	}
}

func (s *Server) getNote(c *fiber.Ctx) error {
	store := s.Artifacts
	if err := requireID("note", c.Params("id")); err != nil {
		return err
	}
	n, err := store.GetNoteByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": n.ID, "path": n.Path(), "level": n.Level, "key": n.Key, "org_id": n.OrgID, "guild_id": n.GuildID, "agent_id": n.AgentID,
		"content": n.Content, "created_at": n.CreatedAt, "updated_at": n.UpdatedAt})
}

// contentBody is PUT of a note or of an agent's memory.
type contentBody struct {
	Content string `json:"content"`
}

// putNote seeds a note at the route's level, under the note tools' rules (its key a .md file name,
// at most NoteMaxChars): created (201) or replaced (200), as note_write would.
func (s *Server) putNote(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var b contentBody
		if err := decode(c, &b); err != nil {
			return err
		}
		ch, err := s.owner(c, level)
		if err != nil {
			return err
		}
		key, err := url.PathUnescape(c.Params("key"))
		if err != nil {
			return orchestrator.Errorf(orchestrator.EINVALID, "note key %q is not a valid URL path segment: %v", c.Params("key"), err)
		}
		if problems := orchestrator.NoteProblems(key, b.Content); len(problems) > 0 {
			return orchestrator.Errorf(orchestrator.EINVALID, "note not written: %s", strings.Join(problems, "; "))
		}
		a := orchestrator.Artifact{Kind: orchestrator.ArtifactNote, Level: level, OrgID: ch.OrgID, Key: key, Content: b.Content}
		if level != orchestrator.LevelOrg {
			a.GuildID = ch.GuildID
		}
		if level == orchestrator.LevelAgent {
			a.AgentID = ch.AgentID
		}
		n, created, err := s.Artifacts.PutNote(c.UserContext(), a, s.now())
		if err != nil {
			return err
		}
		if created {
			c.Status(fiber.StatusCreated)
		}
		return c.JSON(fiber.Map{"id": n.ID, "path": n.Path(), "level": n.Level, "key": n.Key, "org_id": n.OrgID, "guild_id": n.GuildID, "agent_id": n.AgentID,
			"content": n.Content, "created_at": n.CreatedAt, "updated_at": n.UpdatedAt})
	}
}

// putMemory replaces an agent's memory as memory_write does: at most MemoryMaxChars, the previous
// version archived in its revisions.
func (s *Server) putMemory(c *fiber.Ctx) error {
	var b contentBody
	if err := decode(c, &b); err != nil {
		return err
	}
	ch, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	if err := orchestrator.CheckMemory(b.Content); err != nil {
		return err
	}
	m, _, err := s.Artifacts.WriteMemory(c.UserContext(), orchestrator.Agent{ID: ch.AgentID, GuildID: ch.GuildID, OrgID: ch.OrgID}, b.Content, s.now())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"agent_id": ch.AgentID, "content": m.Content, "chars": utf8.RuneCountInString(m.Content), "max_chars": orchestrator.MemoryMaxChars, "updated_at": m.UpdatedAt})
}

func (s *Server) getMemory(c *fiber.Ctx) error {
	store := s.Artifacts
	ch, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	m, err := store.GetMemory(c.UserContext(), ch.AgentID)
	switch {
	case orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND:
		return c.JSON(fiber.Map{"agent_id": ch.AgentID, "content": "", "chars": 0, "max_chars": orchestrator.MemoryMaxChars, "updated_at": nil})
	case err != nil:
		return err
	}
	return c.JSON(fiber.Map{"agent_id": ch.AgentID, "content": m.Content, "chars": utf8.RuneCountInString(m.Content), "max_chars": orchestrator.MemoryMaxChars, "updated_at": m.UpdatedAt})
}

func (s *Server) listMemoryRevisions(c *fiber.Ctx) error {
	store := s.Artifacts
	ch, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	revs, err := store.ListMemoryRevisions(c.UserContext(), ch.AgentID)
	if err != nil {
		return err
	}
	if revs == nil {
		revs = []orchestrator.MemoryRevision{}
	}
	return c.JSON(fiber.Map{"revisions": revs})
}
