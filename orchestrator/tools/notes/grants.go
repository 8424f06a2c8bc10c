package notes

import (
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// The four artifact grants that decide note reach.
const (
	GrantReadGuild  = "read_guild"
	GrantReadOrg    = "read_org"
	GrantWriteGuild = "write_guild"
	GrantWriteOrg   = "write_org"
)

// Defaults are the grants with no binding row anywhere in the chain: guild read and write and
// organisation read on, organisation write off.
var Defaults = Grants{ReadGuild: true, ReadOrg: true, WriteGuild: true, WriteOrg: false}

// Grants is what note reach resolves to for one agent. An agent always reads and writes its own notes.
type Grants struct {
	ReadGuild, ReadOrg, WriteGuild, WriteOrg bool
}

// Resolve walks the artifact_grant binding rows of an agent's chain (platform, organisation, guild,
// agent): each present row replaces the grant, an absent row leaves it, and a grant no row names
// keeps its default. Rows of other catalog kinds are ignored; rows may come in any order.
func Resolve(rows []orchestrator.Binding) Grants {
	g := Defaults
	for _, scope := range orchestrator.Scopes {
		for _, r := range rows {
			if r.Scope != scope || r.CatalogKind != orchestrator.CatalogArtifactGrant {
				continue
			}
			switch r.CatalogID {
			case GrantReadGuild:
				g.ReadGuild = r.Enabled
			case GrantReadOrg:
				g.ReadOrg = r.Enabled
			case GrantWriteGuild:
				g.WriteGuild = r.Enabled
			case GrantWriteOrg:
				g.WriteOrg = r.Enabled
			}
		}
	}
	return g
}

// CanRead returns nil when notes at level are readable, else an ENOTFOUND error naming the grant.
func (g Grants) CanRead(level string) error {
	switch {
	case level == orchestrator.LevelGuild && !g.ReadGuild:
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "guild notes are not readable for you (404: the %s grant is off)", GrantReadGuild)
	case level == orchestrator.LevelOrg && !g.ReadOrg:
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "organisation notes are not readable for you (404: the %s grant is off)", GrantReadOrg)
	}
	return nil
}

// CanWrite returns nil when notes at level are writable, else an EFORBIDDEN error naming the grant.
func (g Grants) CanWrite(level string) error {
	grant := ""
	switch {
	case level == orchestrator.LevelGuild && !g.WriteGuild:
		grant = GrantWriteGuild
	case level == orchestrator.LevelOrg && !g.WriteOrg:
		grant = GrantWriteOrg
	}
	if grant == "" {
		return nil
	}
	return orchestrator.Errorf(orchestrator.EFORBIDDEN, "you may not write %s notes (403: the %s grant is off); write at level agent instead, or ask the operator to turn %s on",
		level, grant, grant)
}

// String lists the grants, for messages and metadata.
func (g Grants) String() string {
	return fmt.Sprintf("read_guild=%t read_org=%t write_guild=%t write_org=%t", g.ReadGuild, g.ReadOrg, g.WriteGuild, g.WriteOrg)
}
