package identity

import (
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// cacheTTL bounds how long a credential read from the store is trusted without a change notice:
// revocations, role changes and closes arrive as notices at once; the TTL only covers a notice lost
// while the listener reconnected (and the cache is off while it is down).
const cacheTTL = 30 * time.Second

// maxCached bounds the credentials kept; past it, the cache starts over.
const maxCached = 50000

// cached is a credential as the store answered, with what it depends on.
type cached struct {
	cred     orchestrator.Credential
	loadedAt time.Time
	deps     []string // invalidation keys: cred:<kind>:<id>, account:<id>, run:<id>, agent:<id>
	touched  time.Time
}

// cache keeps credentials by hash between requests, and the values that reach a run, for as long
// as the change listener is live.
type cache struct {
	mu    sync.Mutex
	live  bool
	gen   uint64 // counts invalidations: a read that began before one is not kept
	creds map[string]*cached
	runs  map[string]runValues // a run's credential values for redaction, by run id
}

// runValues is a run's credential values as last opened.
type runValues struct {
	vals     []string
	loadedAt time.Time
}

// Invalidation keys, as the database's change notices name them.
func credKey(kind, id string) string { return "cred:" + kind + ":" + id }
func accountKey(id string) string    { return "account:" + id }
func runKey(id string) string        { return "run:" + id }
func agentKey(id string) string      { return "agent:" + id }

// depsOf lists what a credential depends on.
func depsOf(c orchestrator.Credential) []string {
	deps := []string{credKey(c.Kind, c.ID)}
	if c.Account != nil {
		deps = append(deps, accountKey(c.Account.ID))
	}
	if c.RunID != "" {
		deps = append(deps, runKey(c.RunID))
	}
	if c.Chain.AgentID != "" {
		deps = append(deps, agentKey(c.Chain.AgentID))
	}
	return deps
}

// get returns the cached credential of a hash, if fresh, and the generation a read from the store
// begins at.
func (c *cache) get(hash string, now time.Time) (*cached, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.creds[hash]
	if !ok || !c.live || now.Sub(e.loadedAt) > cacheTTL {
		return nil, c.gen, false
	}
	return e, c.gen, true
}

// put keeps a credential the store answered, when the listener is live and nothing changed since
// the read began (generation gen).
func (c *cache) put(hash string, cred orchestrator.Credential, gen uint64, now time.Time) *cached {
	e := &cached{cred: cred, loadedAt: now, deps: depsOf(cred)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.gen != gen {
		return e
	}
	if c.creds == nil || len(c.creds) >= maxCached {
		c.creds = map[string]*cached{}
	}
	c.creds[hash] = e
	return e
}

// invalidate drops what depends on key ("" drops everything). Any change of a credential or an
// account may change what reaches a run, so the run values go too (a run's close does not).
func (c *cache) invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if !strings.HasPrefix(key, "run:") {
		c.runs = nil
	}
	if key == "" {
		c.creds = nil
		return
	}
	for h, e := range c.creds {
		for _, d := range e.deps {
			if d == key {
				delete(c.creds, h)
				break
			}
		}
	}
}

// setLive turns the cache on while the change listener is connected; off (or newly on) it
// starts empty, since notices may have been missed.
func (c *cache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.gen++
	c.creds, c.runs = nil, nil
}

// runGet returns a run's cached credential values, if fresh, and the generation a read begins at.
func (c *cache) runGet(runID string, now time.Time) ([]string, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.runs[runID]
	if !ok || !c.live || now.Sub(v.loadedAt) > cacheTTL {
		return nil, c.gen, false
	}
	return v.vals, c.gen, true
}

// runPut keeps a run's credential values, when the listener is live and nothing changed since gen.
func (c *cache) runPut(runID string, vals []string, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.gen != gen {
		return
	}
	if c.runs == nil || len(c.runs) >= maxCached {
		c.runs = map[string]runValues{}
	}
	c.runs[runID] = runValues{vals: vals, loadedAt: now}
}
