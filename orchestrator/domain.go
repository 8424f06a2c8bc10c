package orchestrator

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// Id prefixes of the objects the orchestrator creates.
const (
	PrefixOrg   = "org"
	PrefixGuild = "gld"
	PrefixAgent = "agt"
	PrefixRun   = "run"
	PrefixCall  = "call"
	// PrefixProcess names an orchestrator process among the replicas on one database.
	PrefixProcess = "prc"
)

// ValidID reports whether id is safe as a helper run/call id and as a path segment: the
// protocol's id rule, [A-Za-z0-9_-]{1,64}, which shared/envelope holds.
func ValidID(id string) bool { return envelope.ValidID(id) }

// idAlphabet is lowercase base32 without padding-prone letters: ids read well in logs and URLs.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns prefix_ followed by 20 random characters (100 bits) from crypto/rand.
func NewID(prefix string) string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the runtime guarantees this never happens
	}
	out := make([]byte, 0, len(prefix)+1+len(b))
	out = append(out, prefix...)
	out = append(out, '_')
	for _, c := range b {
		out = append(out, idAlphabet[c&31])
	}
	return string(out)
}

// Org is an organisation: the top scope below the platform.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Guild is a team of agents inside an organisation.
type Guild struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"org_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Agent is one agent of a guild with its tool configuration.
type Agent struct {
	ID        string      `json:"id"`
	GuildID   string      `json:"guild_id"`
	OrgID     string      `json:"org_id"`
	Name      string      `json:"name"`
	Config    AgentConfig `json:"config"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// ScopeStore persists organisations, guilds and agents.
type ScopeStore interface {
	CreateOrg(ctx context.Context, o Org) error
	GetOrg(ctx context.Context, id string) (Org, error)
	ListOrgs(ctx context.Context) ([]Org, error)
	CreateGuild(ctx context.Context, g Guild) error
	GetGuild(ctx context.Context, id string) (Guild, error)
	ListGuilds(ctx context.Context, orgID string) ([]Guild, error)
	CreateAgent(ctx context.Context, a Agent) error
	GetAgent(ctx context.Context, id string) (Agent, error)
	ListAgents(ctx context.Context, guildID string) ([]Agent, error)
	// UpdateAgent applies the patch to the stored agent in one transaction and returns the result.
	UpdateAgent(ctx context.Context, id string, p AgentPatch) (Agent, error)
}

// AgentPatch is a partial update of an agent: nil fields stay as they are.
type AgentPatch struct {
	Name   *string
	Config ConfigPatch
}

// ValidName checks a display name: 1 to 200 characters, not only spaces, and no control character
// (a NUL, a tab, a line break: none belongs in a name, and a NUL cannot be stored).
func ValidName(what, name string) error {
	if len([]rune(name)) == 0 || len([]rune(name)) > 200 {
		return Errorf(EINVALID, "%s name must be 1 to 200 characters, got %d", what, len([]rune(name)))
	}
	if r, ok := ControlChar(name); ok {
		if r == 0 {
			return NULError(what + " name")
		}
		return Errorf(EINVALID, "%s name holds the control character %U; a name is one line of printable text", what, r)
	}
	if strings.TrimSpace(name) == "" {
		return Errorf(EINVALID, "%s name must not be blank", what)
	}
	return nil
}
