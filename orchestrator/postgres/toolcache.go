package postgres

import (
	"context"
	"fmt"
	"sync"

	"github.com/guildsai/guilds/orchestrator"
)

// toolCache keeps connections' listed tools as last read, each under the tools_version it was read
// at: a list whose version the database still holds is the list, so a run start does not read it again.
type toolCache struct {
	mu    sync.Mutex
	lists map[string]cachedTools
}

// cachedTools is one connection's list at one version.
type cachedTools struct {
	version int64
	tools   []orchestrator.ListedTool // shared by every reader: never modified
}

// maxCachedLists bounds the cache; past it, it starts again empty.
const maxCachedLists = 4096

// listedTools returns the listed tools of each connection in ids at the version the caller read,
// from the cache, reading those it lacks in one query (and caching them at the version that query
// saw, which may be newer).
func (s *Store) listedTools(ctx context.Context, ids []string, versions map[string]int64) (map[string][]orchestrator.ListedTool, error) {
	out := make(map[string][]orchestrator.ListedTool, len(ids))
	var missing []string
	s.tools.mu.Lock()
	for _, id := range ids {
		if c, ok := s.tools.lists[id]; ok && c.version == versions[id] {
			out[id] = c.tools
		} else {
			missing = append(missing, id)
		}
	}
	s.tools.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT c.id, c.tools_version, t.remote_name, t.name, t.description, t.offered_schema
		FROM mcp_connections c LEFT JOIN mcp_tools t ON t.connection_id = c.id
		WHERE c.id = ANY($1) ORDER BY c.id, t.name`, missing)
	if err != nil {
		return nil, fmt.Errorf("read listed tools: %w", err)
	}
	read := map[string]cachedTools{}
	for rows.Next() {
		var id string
		var version int64
		var remote, name, desc *string
		var schema []byte
		if err := rows.Scan(&id, &version, &remote, &name, &desc, &schema); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read listed tools: %w", err)
		}
		c := read[id]
		c.version = version
		if remote != nil {
			c.tools = append(c.tools, orchestrator.ListedTool{RemoteName: *remote, Name: *name, Description: *desc, OfferedSchema: schema})
		}
		read[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read listed tools: %w", err)
	}
	s.tools.mu.Lock()
	defer s.tools.mu.Unlock()
	if s.tools.lists == nil || len(s.tools.lists)+len(read) > maxCachedLists {
		s.tools.lists = map[string]cachedTools{}
	}
	for id, c := range read {
		s.tools.lists[id] = c
		out[id] = c.tools
	}
	return out, nil
}
