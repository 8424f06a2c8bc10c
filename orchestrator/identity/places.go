package identity

import (
	"context"
	"sync"

	"github.com/guildsai/guilds/orchestrator"
)

// maxPlaces bounds the placements kept; past it, the cache starts over.
const maxPlaces = 100000

// Places places the objects requests name and keeps each answer: where an object sits never
// changes (a run stays with its agent, an agent in its guild), so a placement is read once per
// process. A deleted object's placement may outlive it; the route's own read then answers 404.
type Places struct {
	Store orchestrator.Placer

	mu   sync.Mutex
	seen map[string]placed
}

type placed struct {
	chain orchestrator.Chain
	run   string
}

var _ orchestrator.Placer = (*Places)(nil)

// Place answers from the cache, or asks the store once.
func (p *Places) Place(ctx context.Context, kind, id string) (orchestrator.Chain, string, error) {
	key := kind + "\x00" + id
	p.mu.Lock()
	got, ok := p.seen[key]
	p.mu.Unlock()
	if ok {
		return got.chain, got.run, nil
	}
	c, run, err := p.Store.Place(ctx, kind, id)
	if err != nil {
		return c, run, err
	}
	p.mu.Lock()
	if p.seen == nil || len(p.seen) >= maxPlaces {
		p.seen = map[string]placed{}
	}
	p.seen[key] = placed{chain: c, run: run}
	p.mu.Unlock()
	return c, run, nil
}
