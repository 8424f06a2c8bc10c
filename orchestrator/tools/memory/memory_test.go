package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/memory"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func setup(t *testing.T) (context.Context, *postgres.Store, *registry.Registry, orchestrator.Agent) {
	t.Helper()
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	a := orchestrator.Agent{ID: "a1", GuildID: "g1", OrgID: "o1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{
		store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}),
		store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}),
		store.CreateAgent(ctx, a),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New()
	if err := (&memory.Tools{Store: store}).Register(reg); err != nil {
		t.Fatal(err)
	}
	return ctx, store, reg, a
}

func write(ctx context.Context, reg *registry.Registry, a orchestrator.Agent, content string) (string, error) {
	args, _ := json.Marshal(map[string]string{"content": content})
	return reg.Invoke(ctx, "memory_write", &registry.Call{AgentID: a.ID, GuildID: a.GuildID, OrgID: a.OrgID, Args: args, Meta: map[string]any{}})
}

func TestWriteArchivesAndCapsRevisions(t *testing.T) {
	ctx, store, reg, a := setup(t)
	if _, err := store.GetMemory(ctx, a.ID); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("memory before any write: %v", err)
	}
	out, err := write(ctx, reg, a, "v0")
	if err != nil || out != "memory written (2 of 12000 characters)" {
		t.Fatalf("first write: %q %v", out, err)
	}
	for i := 1; i <= 60; i++ {
		out, err = write(ctx, reg, a, fmt.Sprintf("v%d", i))
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out, "previous version is archived") {
		t.Fatalf("later write: %q", out)
	}
	mem, err := store.GetMemory(ctx, a.ID)
	if err != nil || mem.Content != "v60" || mem.Kind != orchestrator.ArtifactMemory {
		t.Fatalf("memory: %+v %v", mem, err)
	}
	revs, err := store.ListMemoryRevisions(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != orchestrator.MemoryRevisionsKept {
		t.Fatalf("%d revisions kept, want %d", len(revs), orchestrator.MemoryRevisionsKept)
	}
	// Newest first: v59 (replaced by v60) down to v10.
	if revs[0].Content != "v59" || revs[49].Content != "v10" {
		t.Fatalf("revisions run %q .. %q, want v59 .. v10", revs[0].Content, revs[49].Content)
	}
	if revs[0].ArchivedAt.Before(revs[0].WrittenAt) {
		t.Fatalf("archived before written: %+v", revs[0])
	}
}

func TestLimit(t *testing.T) {
	ctx, store, reg, a := setup(t)
	if _, err := write(ctx, reg, a, strings.Repeat("é", orchestrator.MemoryMaxChars)); err != nil {
		t.Fatalf("exactly 12000 characters (24000 bytes) must fit: %v", err)
	}
	_, err := write(ctx, reg, a, strings.Repeat("x", orchestrator.MemoryMaxChars+5))
	if orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), "content is 12005 characters; memory holds at most 12000, so cut 5") {
		t.Fatalf("over the limit: %v", err)
	}
	mem, _ := store.GetMemory(ctx, a.ID)
	revs, _ := store.ListMemoryRevisions(ctx, a.ID)
	if !strings.HasPrefix(mem.Content, "é") || len(revs) != 0 {
		t.Fatalf("a rejected write changed something: %d revisions, memory %.10q", len(revs), mem.Content)
	}
}

// TestConcurrentWrites: every replaced version is archived exactly once, even for the first writes.
func TestConcurrentWrites(t *testing.T) {
	ctx, store, reg, a := setup(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := write(ctx, reg, a, fmt.Sprintf("w%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	revs, err := store.ListMemoryRevisions(ctx, a.ID)
	if err != nil || len(revs) != 7 {
		t.Fatalf("%d revisions after 8 writes, want 7 (%v)", len(revs), err)
	}
}
