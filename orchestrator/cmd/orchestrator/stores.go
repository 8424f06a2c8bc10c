package main

import (
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/approvals"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/group"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
	"github.com/guildsai/guilds/orchestrator/tools/memory"
	"github.com/guildsai/guilds/orchestrator/tools/notes"
	"github.com/guildsai/guilds/orchestrator/tools/records"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
	"github.com/guildsai/guilds/orchestrator/tools/scripts"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
)

// Every store interface the root and the packages declare, which the PostgreSQL store must have in
// full: a method renamed or dropped fails the build here rather than turning a guarantee off.
var (
	_ orchestrator.ScopeStore     = (*postgres.Store)(nil)
	_ orchestrator.RunStore       = (*postgres.Store)(nil)
	_ orchestrator.ChainReader    = (*postgres.Store)(nil)
	_ orchestrator.IdentityStore  = (*postgres.Store)(nil)
	_ orchestrator.Placer         = (*postgres.Store)(nil)
	_ orchestrator.OIDCStateStore = (*postgres.Store)(nil)
	_ orchestrator.ApprovalStore  = (*postgres.Store)(nil)
	_ identity.AuditStore         = (*postgres.Store)(nil)
	_ runs.Store                  = (*postgres.Store)(nil)
	_ bindings.Store              = (*postgres.Store)(nil)
	_ lifecycle.Store             = (*postgres.Store)(nil)
	_ connections.CallerStore     = (*postgres.Store)(nil)
	_ connections.OAuthStore      = (*postgres.Store)(nil)
	_ connections.CredentialStore = (*postgres.Store)(nil)
	_ github.Store                = (*postgres.Store)(nil)
	_ httpapi.ScopeStore          = (*postgres.Store)(nil)
	_ httpapi.ArtifactStore       = (*postgres.Store)(nil)
	_ httpapi.AccountReader       = (*postgres.Store)(nil)
	_ httpapi.PlatformStore       = (*postgres.Store)(nil)
	_ notes.Store                 = (*postgres.Store)(nil)
	_ records.Store               = (*postgres.Store)(nil)
	_ memory.Store                = (*postgres.Store)(nil)
	_ issues.Store                = (*postgres.Store)(nil)
	_ schedules.Store             = (*postgres.Store)(nil)
	_ group.Store                 = (*postgres.Store)(nil)
	_ scripts.Store               = (*postgres.Store)(nil)
	_ secrets.Store               = (*postgres.Store)(nil)
	_ wallet.Nonces               = (*postgres.WalletNonces)(nil)
	_ identity.Changes            = postgres.Listener{}
	_ approvals.Notices           = postgres.Listener{}
)

// The services the run service and the API reach through the interfaces they declare.
var (
	_ runs.Approver           = (*approvals.Service)(nil)
	_ runs.MCPArgsChecker     = (*connections.Caller)(nil)
	_ httpapi.ApprovalService = (*approvals.Service)(nil)
)
