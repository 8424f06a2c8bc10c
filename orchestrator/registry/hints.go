package registry

import (
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// Hints is what is known of what a tool does, for clients that decide before calling (MCP's tool
// annotations): only what holds is set, and a false field claims nothing.
type Hints struct {
	ReadOnly    bool // it only reads: it changes nothing (readOnlyHint)
	Destructive bool // it spends, deletes or sends: what it does cannot be taken back (destructiveHint)
	OpenWorld   bool // it reaches past the orchestrator and the agent's sandbox: the web, a connector (openWorldHint)
}

// readVerbs end the names of the native tools that only read (note_find, file_read, code_callers, …).
var readVerbs = map[string]bool{"find": true, "get": true, "search": true, "list": true, "read": true,
	"match": true, "map": true, "outline": true, "callers": true, "snapshot": true}

// destructiveVerbs end the names of the native tools that delete or send (note_delete,
// record_remove, group_post).
var destructiveVerbs = map[string]bool{"delete": true, "remove": true, "post": true, "send": true}

// NativeHints derives a native tool's hints from its family and the verb its name ends with: a
// read verb makes it read-only, a delete or send verb destructive, and the browser and web-search
// families reach the open web. shell, file_write and the like claim nothing: they change the
// workspace, but what they do is the model's to say.
func NativeHints(t Tool) Hints {
	verb := t.Name[strings.LastIndexByte(t.Name, '_')+1:]
	return Hints{
		ReadOnly:    readVerbs[verb],
		Destructive: destructiveVerbs[verb],
		OpenWorld:   t.Family == orchestrator.FamilyBrowser || t.Family == orchestrator.FamilySearch,
	}
}

// spendVerbs are the words of a connector tool's remote name that spend, delete or send.
var spendVerbs = map[string]bool{"send": true, "delete": true, "remove": true, "cancel": true, "transfer": true, "swap": true,
	"buy": true, "sell": true, "pay": true, "withdraw": true, "burn": true, "bridge": true, "trash": true}

// connectorReads are the first words of a connector tool's remote name that only ask.
var connectorReads = map[string]bool{"get": true, "list": true, "search": true, "read": true, "find": true, "fetch": true, "check": true}

// ConnectorHints derives a connector tool's hints (an MCP server's or a local adapter's) from its
// remote name and whether its catalog lists it Off until an operator enables it (defaultOff: the
// Wallet's spend tools, Gmail's send, Drive's writes): every connector reaches the open world; one
// listed Off, or named with a spend, delete or send word, is destructive unless its name starts
// by asking (get_, list_, …). None is claimed read-only: the server alone knows, and a client may
// call a read-only tool without asking anyone.
func ConnectorHints(remoteName string, defaultOff bool) Hints {
	words := strings.FieldsFunc(strings.ToLower(remoteName), func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	destructive := defaultOff
	for _, w := range words {
		destructive = destructive || spendVerbs[w]
	}
	if len(words) > 0 && connectorReads[words[0]] {
		destructive = false
	}
	return Hints{Destructive: destructive, OpenWorld: true}
}
