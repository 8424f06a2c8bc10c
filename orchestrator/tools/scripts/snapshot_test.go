package scripts_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/scripts"
	"github.com/jackc/pgx/v5"
)

// version is a script printing its name, its version and its arguments.
func version(name, v string) string {
	return "import json, sys\na = json.load(sys.stdin)\nprint('" + name + " " + v + "', json.dumps(a, sort_keys=True))\n"
}

var cityParams = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}

// restart gives w a fresh runs service and script tools on the same database, as a restarted
// orchestrator would have: nothing of the first process's memory survives.
func (w *world) restart() {
	reg := registry.New()
	tools := &scripts.Tools{Store: postgres.NewStore(w.pool), Sandboxes: w.box}
	must(w.t, tools.Register(reg))
	w.svc = &runs.Service{Scopes: w.store, Runs: w.store, Registry: reg, Offer: runs.DefaultOffer{}, Secrets: w.sec, Dynamic: tools}
}

// TestSnapshotTakenAtRunStart: run A takes its snapshot when it starts, before any script call.
// Another run then edits, deletes, creates and re-parameterises scripts; A still lists, reads and
// runs (by script_run and as a first-class tool) the versions it started with, also after a
// restart. A's own script_create and script_delete change A's snapshot.
func TestSnapshotTakenAtRunStart(t *testing.T) {
	w := newWorld(t)
	setup := w.run("a3")
	for _, name := range []string{"keep", "edit", "gone"} {
		if out := w.call(setup, "script_create", map[string]any{"name": name, "description": name + " v1", "source": version(name, "v1")}); !strings.Contains(out, "created") {
			t.Fatalf("create %s: %q", name, out)
		}
	}
	w.call(setup, "script_create", map[string]any{"name": "weather", "description": "weather v1", "source": version("weather", "v1"), "parameters": cityParams})

	a := w.run("a3") // no script call yet: the snapshot is already taken
	b := w.run("a3")
	w.call(b, "script_create", map[string]any{"name": "edit", "description": "edit v2", "source": version("edit", "v2")})
	w.call(b, "script_create", map[string]any{"name": "weather", "description": "weather v2", "source": version("weather", "v2"), "parameters": cityParams})
	w.call(b, "script_create", map[string]any{"name": "fresh", "description": "fresh v1", "source": version("fresh", "v1")})
	if out := w.call(b, "script_delete", map[string]any{"name": "gone"}); !strings.Contains(out, "deleted script gone") {
		t.Fatalf("b deletes gone: %q", out)
	}
	if out := w.call(b, "script_run", map[string]any{"name": "edit"}); out != "edit v2 {}" {
		t.Fatalf("b runs its own edit: %q", out)
	}

	check := func(when string) {
		t.Helper()
		if out := w.call(a, "script_list", map[string]any{}); out != "edit: edit v1\ngone: gone v1\nkeep: keep v1\nweather: weather v1 (takes parameters)" {
			t.Fatalf("%s: a lists %q", when, out)
		}
		if out := w.call(a, "script_read", map[string]any{"name": "edit"}); !strings.Contains(out, "'edit v1'") {
			t.Fatalf("%s: a reads %q", when, out)
		}
		for _, tc := range []struct{ tool, want string }{
			{"edit", "edit v1 {}"}, {"gone", "gone v1 {}"}, {"keep", "keep v1 {}"},
		} {
			if out := w.call(a, "script_run", map[string]any{"name": tc.tool}); out != tc.want {
				t.Fatalf("%s: a runs %s: %q, want %q", when, tc.tool, out, tc.want)
			}
		}
		if out := w.call(a, "script_run", map[string]any{"name": "fresh"}); !strings.Contains(out, "not among this run's scripts") {
			t.Fatalf("%s: a runs a script created after it started: %q", when, out)
		}
		if out := w.call(a, "weather", map[string]any{"city": "Oslo"}); out != `weather v1 {"city": "Oslo"}` {
			t.Fatalf("%s: a's first-class weather tool: %q", when, out)
		}
	}
	check("before restart")
	w.restart()
	check("after restart")

	// A's own changes reach A's snapshot (and the catalog).
	if out := w.call(a, "script_create", map[string]any{"name": "edit", "description": "edit v3", "source": version("edit", "v3")}); !strings.Contains(out, "replaced script edit") {
		t.Fatalf("a replaces edit: %q", out)
	}
	if out := w.call(a, "script_run", map[string]any{"name": "edit"}); out != "edit v3 {}" {
		t.Fatalf("a runs its own edit: %q", out)
	}
	// gone is no longer in the catalog, but it is in A's snapshot: deleting it drops it from there.
	if out := w.call(a, "script_delete", map[string]any{"name": "gone"}); !strings.Contains(out, "deleted script gone") {
		t.Fatalf("a deletes gone: %q", out)
	}
	if out := w.call(a, "script_run", map[string]any{"name": "gone"}); !strings.Contains(out, "not among this run's scripts") {
		t.Fatalf("a runs gone after deleting it: %q", out)
	}
	if out := w.call(a, "script_delete", map[string]any{"name": "gone"}); !strings.Contains(out, `script "gone" not found`) {
		t.Fatalf("second delete: %q", out)
	}
	if out := w.call(a, "script_run", map[string]any{"name": "edit"}); out != "edit v3 {}" {
		t.Fatalf("a after its delete: %q", out)
	}

	// A new run sees the catalog as it now is.
	c := w.run("a3")
	if out := w.call(c, "script_list", map[string]any{}); out != "edit: edit v3\nfresh: fresh v1\nkeep: keep v1\nweather: weather v2 (takes parameters)" {
		t.Fatalf("a new run lists %q", out)
	}
	if out := w.call(c, "weather", map[string]any{"city": "Rome"}); out != `weather v2 {"city": "Rome"}` {
		t.Fatalf("a new run's weather tool: %q", out)
	}
}

// TestSnapshotIdempotentPerRunID: a start retried under the same run id (the scheduler does that
// after a crash) gets the snapshot the first attempt took, and another agent cannot claim the id.
func TestSnapshotIdempotentPerRunID(t *testing.T) {
	w := newWorld(t)
	setup := w.run("a3")
	w.call(setup, "script_create", map[string]any{"name": "one", "description": "one v1", "source": version("one", "v1")})
	id := orchestrator.NewID(orchestrator.PrefixRun)
	first, err := w.store.SnapshotRunScripts(w.ctx, id, "a3", w.now())
	must(t, err)
	w.call(setup, "script_create", map[string]any{"name": "one", "description": "one v2", "source": version("one", "v2")})
	w.call(setup, "script_create", map[string]any{"name": "two", "description": "two", "source": version("two", "v1")})
	r, err := w.svc.StartRun(w.ctx, "a3", runs.StartRequest{ID: id, Kind: orchestrator.KindDirect})
	must(t, err)
	if len(first) != 1 || first[0].Description != "one v1" {
		t.Fatalf("first snapshot %+v", first)
	}
	if out := w.call(r.ID, "script_list", map[string]any{}); out != "one: one v1" {
		t.Fatalf("the retried start sees %q, want the first snapshot", out)
	}
	if _, err := w.store.SnapshotRunScripts(w.ctx, id, "a1", w.now()); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("another agent's snapshot under the same id: %v", err)
	}
	if _, err := w.svc.StartRun(w.ctx, "a3", runs.StartRequest{ID: "not-a-run", Kind: orchestrator.KindDirect}); orchestrator.ErrorCode(err) != orchestrator.EINVALID {
		t.Fatalf("bad run id: %v", err)
	}
}

// TestNoSnapshotWithoutStartHook: a runs service not wired with the script tools' start hook
// leaves runs without a snapshot; the script tools say so instead of snapshotting late.
func TestNoSnapshotWithoutStartHook(t *testing.T) {
	w := newWorld(t)
	reg := registry.New()
	must(t, (&scripts.Tools{Store: w.store, Sandboxes: w.box}).Register(reg))
	w.svc = &runs.Service{Scopes: w.store, Runs: w.store, Registry: reg, Offer: runs.DefaultOffer{}}
	r := w.run("a3")
	for tool, args := range map[string]map[string]any{
		"script_list":   {},
		"script_create": {"name": "x", "description": "x", "source": "print(1)"},
		"script_run":    {"name": "x"},
		"script_read":   {"name": "x"},
	} {
		if out := w.call(r, tool, args); !strings.Contains(out, "has no script snapshot") {
			t.Fatalf("%s: %q", tool, out)
		}
	}
	if all, err := w.store.ListScripts(w.ctx, "a3"); err != nil || len(all) != 0 {
		t.Fatalf("a refused create stored %v %v", all, err)
	}
}

// TestMaxScriptsPerAgent: the limit is the agent's config.max_scripts, read when the script is
// saved; many runs creating new names at once never pass it, and a config change applies to the
// next create. Replacing an existing name is never refused.
func TestMaxScriptsPerAgent(t *testing.T) {
	w := newWorld(t)
	limit := 4
	_, err := w.store.UpdateAgent(w.ctx, "a3", orchestrator.AgentPatch{Config: orchestrator.ConfigPatch{MaxScripts: &limit}})
	must(t, err)
	setup := w.run("a3")
	for i := range 3 {
		w.call(setup, "script_create", map[string]any{"name": fmt.Sprintf("s%d", i), "description": "d", "source": "print(1)"})
	}
	for round := range 3 {
		// One slot is left: of 8 runs creating 8 new names at once, exactly one gets it.
		var wg sync.WaitGroup
		outs := make([]string, 8)
		ids := make([]string, len(outs))
		for i := range ids {
			ids[i] = w.run("a3")
		}
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = w.call(ids[i], "script_create", map[string]any{"name": fmt.Sprintf("r%d-%d", round, i), "description": "d", "source": "print(2)"})
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for _, out := range outs {
			switch {
			case strings.Contains(out, "created script"):
				created++
			case strings.Contains(out, fmt.Sprintf("you already have %d scripts, the most your config allows (max_scripts %d)", limit, limit)):
				refused++
			default:
				t.Fatalf("round %d: unexpected %q", round, out)
			}
		}
		all, err := w.store.ListScripts(w.ctx, "a3")
		must(t, err)
		if created != 1 || refused != len(outs)-1 || len(all) != limit {
			t.Fatalf("round %d: %d created, %d refused, %d stored; want 1, %d, %d", round, created, refused, len(all), len(outs)-1, limit)
		}
		// Free the slot for the next round.
		for _, s := range all {
			if strings.HasPrefix(s.Name, "r") {
				must(t, w.store.DeleteScript(w.ctx, "a3", "", s.Name))
			}
		}
	}
	// Lowering the limit below the count refuses new names but still replaces existing ones.
	limit = 2
	_, err = w.store.UpdateAgent(w.ctx, "a3", orchestrator.AgentPatch{Config: orchestrator.ConfigPatch{MaxScripts: &limit}})
	must(t, err)
	if out := w.call(setup, "script_create", map[string]any{"name": "new", "description": "d", "source": "print(1)"}); !strings.Contains(out, "you already have 3 scripts, the most your config allows (max_scripts 2)") {
		t.Fatalf("over a lowered limit: %q", out)
	}
	if out := w.call(setup, "script_create", map[string]any{"name": "s0", "description": "d", "source": "print(0)"}); !strings.Contains(out, "replaced script s0") {
		t.Fatalf("replace over a lowered limit: %q", out)
	}
	// An agent stored before max_scripts existed (config without the key) gets the default, 10.
	_, err = w.pool.Exec(w.ctx, `UPDATE agents SET config = config - 'max_scripts' WHERE id = 'a3'`)
	must(t, err)
	for i := 3; i < orchestrator.DefaultMaxScripts; i++ {
		if out := w.call(setup, "script_create", map[string]any{"name": fmt.Sprintf("s%d", i), "description": "d", "source": "print(1)"}); !strings.Contains(out, "created") {
			t.Fatalf("create %d under the default: %q", i, out)
		}
	}
	if out := w.call(setup, "script_create", map[string]any{"name": "eleventh", "description": "d", "source": "print(1)"}); !strings.Contains(out, "(max_scripts 10)") {
		t.Fatalf("past the default: %q", out)
	}
}

// TestSnapshotOfAStartThatNeverWroteItsRun: a snapshot written for a start whose run row never
// came (the process died, the insert failed) is swept at the agent's next start an hour on, and a
// recent one is left alone (its start may still be retried).
func TestSnapshotOfAStartThatNeverWroteItsRun(t *testing.T) {
	w := newWorld(t)
	old, recent := orchestrator.NewID(orchestrator.PrefixRun), orchestrator.NewID(orchestrator.PrefixRun)
	_, err := w.store.SnapshotRunScripts(w.ctx, old, "a3", w.now().Add(-2*time.Hour))
	must(t, err)
	_, err = w.store.SnapshotRunScripts(w.ctx, recent, "a3", w.now().Add(-10*time.Minute))
	must(t, err)
	kept := w.run("a3")
	rows, err := w.pool.Query(w.ctx, "SELECT run_id FROM run_script_snapshots ORDER BY run_id")
	must(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	if len(ids) != 2 || !slices.Contains(ids, kept) || !slices.Contains(ids, recent) {
		t.Fatalf("snapshots %v, want the new run's %s and the recent %s", ids, kept, recent)
	}
}
