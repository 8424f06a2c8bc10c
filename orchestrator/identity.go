package orchestrator

import (
	"context"
	"time"
)

// Id prefixes of the identity objects.
const (
	PrefixAccount    = "acct"
	PrefixSession    = "ses"
	PrefixToken      = "tok"
	PrefixAgentKey   = "akey"
	PrefixInvitation = "inv"
)

// Roles an account holds at an organisation or a guild, from the least to the most.
const (
	RoleViewer   = "viewer"   // reads, but never a secret's names, a stored call's arguments or results, or a credential form
	RoleOperator = "operator" // everything in the scope but its members
	RoleOwner    = "owner"    // everything in the scope, its members and tokens included
)

// Roles lists the roles in order, the least first.
var Roles = []string{RoleViewer, RoleOperator, RoleOwner}

// RoleRank orders roles: 0 for none (or an unknown name), 1 viewer, 2 operator, 3 owner.
func RoleRank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleOwner:
		return 3
	}
	return 0
}

// Account is a person who operates the box.
type Account struct {
	ID            string     `json:"id"`
	Email         string     `json:"email"`
	Name          string     `json:"name"`
	InstanceAdmin bool       `json:"instance_admin"`
	HasPassword   bool       `json:"has_password"`
	Deactivated   bool       `json:"deactivated"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	LastSignInAt  *time.Time `json:"last_sign_in_at"`
}

// Membership is an account's role at one organisation or one guild. A guild membership carries its
// guild's organisation, so reach below and above it is decided without a lookup.
type Membership struct {
	AccountID string    `json:"account_id"`
	Scope     string    `json:"scope"` // ScopeOrg or ScopeGuild
	ScopeID   string    `json:"scope_id"`
	OrgID     string    `json:"org_id"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// TokenScope narrows an API token or an invitation to one organisation or guild.
type TokenScope struct {
	Kind string `json:"kind"` // ScopeOrg or ScopeGuild
	ID   string `json:"id"`
}

// APIToken is an account's token for scripts and CI, as listed: never its value.
type APIToken struct {
	ID         string      `json:"id"`
	AccountID  string      `json:"account_id"`
	Name       string      `json:"name"`
	Prefix     string      `json:"prefix"`         // the first characters of the token, to recognise it
	Role       string      `json:"role,omitempty"` // a cap on the account's roles; "" none
	Scope      *TokenScope `json:"scope"`          // nil: wherever the account reaches
	OrgID      string      `json:"-"`              // the scope's organisation
	ExpiresAt  *time.Time  `json:"expires_at"`
	CreatedAt  time.Time   `json:"created_at"`
	LastUsedAt *time.Time  `json:"last_used_at"`
	RevokedAt  *time.Time  `json:"revoked_at"`
}

// AgentKey is a model runtime's key for one agent, as listed: never its value.
type AgentKey struct {
	ID         string     `json:"id"`
	AgentID    string     `json:"agent_id"`
	GuildID    string     `json:"guild_id"`
	OrgID      string     `json:"org_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedBy  string     `json:"created_by"` // the principal that made it (an account id, or "admin")
	ExpiresAt  *time.Time `json:"expires_at"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Invitation is an owner's single-use offer of a role to an email address.
type Invitation struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Scope      TokenScope `json:"scope"`
	OrgID      string     `json:"org_id"`
	Role       string     `json:"role"`
	InvitedBy  string     `json:"invited_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
}

// Credential kinds: what a request authenticated with.
const (
	CredentialBootstrap = "bootstrap" // GUILDS_ADMIN_TOKEN
	CredentialSession   = "session"   // a signed-in account's cookie
	CredentialToken     = "token"     // an account's API token
	CredentialAgentKey  = "agent_key" // a model runtime's key for one agent
	CredentialRunToken  = "run_token" // a run's own token
)

// Credential is what the store knows of a presented secret, found by its hash: whose it is, whether
// it still holds, and (for an account's credentials) the account with its memberships.
type Credential struct {
	Kind      string
	ID        string // the session, token, key or run id
	Account   *Account
	Members   []Membership
	Token     *APIToken // CredentialToken
	Key       *AgentKey // CredentialAgentKey
	RunID     string    // CredentialRunToken
	RunOpen   bool      // CredentialRunToken: the run is still open
	Chain     Chain     // CredentialAgentKey and CredentialRunToken: the agent's organisation, guild and agent
	CSRF      string    // CredentialSession: the token state-changing requests must carry
	ExpiresAt *time.Time
	// LastSeenAt is a session's last use (its idle lifetime runs from it) or a token's last use.
	LastSeenAt *time.Time
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// SessionRow is a new sign-in as stored.
type SessionRow struct {
	ID        string
	Hash      []byte
	AccountID string
	CSRF      string
	Client    string
	UserAgent string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// NewToken is a new API token as stored: the hash finds it, the sealed value joins redaction.
type NewToken struct {
	APIToken
	Hash   []byte
	Sealed []byte
}

// NewAgentKey is a new agent key as stored.
type NewAgentKey struct {
	AgentKey
	Hash   []byte
	Sealed []byte
}

// NewInvitation is a new invitation as stored.
type NewInvitation struct {
	Invitation
	Hash []byte
}

// AcceptWrite is an invitation's acceptance: by an existing account, or by one made with it.
type AcceptWrite struct {
	InvitationID string
	AccountID    string
	NewAccount   *Account
	PasswordHash string
	Now          time.Time
}

// AccountPatch is a partial update of an account: nil fields stay.
type AccountPatch struct {
	Name          *string
	Email         *string
	InstanceAdmin *bool
	PasswordHash  *string
	Deactivate    bool
	Reactivate    bool
}

// SignInState is an email's standing at sign-in: its account (nil when none) with the stored
// password hash, and the lockout kept per email whether an account exists or not.
type SignInState struct {
	Account      *Account
	PasswordHash string
	Failures     int
	LockedUntil  *time.Time
}

// AuditEntry is one row of the audit log: who did what to which objects, and how it ended. It never
// holds a credential, a secret value, a note's content or a call's arguments.
type AuditEntry struct {
	ID         int64             `json:"id"`
	At         time.Time         `json:"at"`
	ActorKind  string            `json:"actor_kind"` // a Credential kind, or "anonymous"
	ActorID    string            `json:"actor_id"`   // the account, token, key or run id; "" for bootstrap and anonymous
	AccountID  string            `json:"account_id,omitempty"`
	Operation  string            `json:"operation"` // the API operation's id (createOrg, putBinding, …)
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Targets    map[string]string `json:"targets"` // the ids the request named (path parameters)
	OrgID      string            `json:"org_id,omitempty"`
	GuildID    string            `json:"guild_id,omitempty"`
	Status     int               `json:"status"`
	RequestID  string            `json:"request_id"`
	ClientAddr string            `json:"client_addr"`
}

// AuditQuery filters the audit log: newest first, rows before After (an id) when set.
type AuditQuery struct {
	OrgID     string // "" every organisation (the instance admin's view)
	Actor     string
	Operation string
	Since     *time.Time
	After     int64
	Limit     int
}

// IdentityStore persists accounts, memberships, sessions, tokens, agent keys, run tokens,
// invitations and the audit log.
type IdentityStore interface {
	// CredentialByHash finds a presented credential of the kind by its SHA-256; none is ENOTFOUND.
	CredentialByHash(ctx context.Context, kind string, hash []byte) (Credential, error)
	// TouchCredential records a credential's last use (sessions and tokens).
	TouchCredential(ctx context.Context, kind, id string, at time.Time) error

	CreateAccount(ctx context.Context, a Account, passwordHash string) (Account, error)
	GetAccount(ctx context.Context, id string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	UpdateAccount(ctx context.Context, id string, p AccountPatch, now time.Time) (Account, error)
	// CountAccounts counts the accounts, deactivated ones included.
	CountAccounts(ctx context.Context) (int, error)
	Memberships(ctx context.Context, accountID string) ([]Membership, error)

	// SignInState reads an email's account and lockout in one round trip.
	SignInState(ctx context.Context, email string) (SignInState, error)
	// RecordSignIn notes the outcome of a password check for the email: a failure counts (and may
	// lock until lockedUntil), a success clears the count.
	RecordSignIn(ctx context.Context, email string, ok bool, lockedUntil *time.Time, now time.Time) error

	CreateSession(ctx context.Context, s SessionRow) error
	// RevokeSessions ends one session of the account, or all of them when id is "".
	RevokeSessions(ctx context.Context, accountID, id string, now time.Time) error

	// PutMembership sets the account's role at the scope (insert or replace).
	PutMembership(ctx context.Context, m Membership) (Membership, error)
	// DeleteMembership removes it; none is ENOTFOUND.
	DeleteMembership(ctx context.Context, accountID, scope, scopeID string) error
	// ListMembers lists the memberships held at the scope, with their accounts.
	ListMembers(ctx context.Context, scope, scopeID string) ([]Member, error)

	CreateToken(ctx context.Context, t NewToken) (APIToken, error)
	ListTokens(ctx context.Context, accountID string) ([]APIToken, error)
	// RevokeToken revokes the account's token; another account's or none is ENOTFOUND.
	RevokeToken(ctx context.Context, accountID, id string, now time.Time) error

	CreateAgentKey(ctx context.Context, k NewAgentKey) (AgentKey, error)
	ListAgentKeys(ctx context.Context, agentID string) ([]AgentKey, error)
	RevokeAgentKey(ctx context.Context, agentID, id string, now time.Time) error

	// SetRunToken stores a run's token hash and sealed value, and when it stops holding.
	SetRunToken(ctx context.Context, runID string, hash, sealed []byte, expires time.Time) error
	// CredentialsReaching returns the sealed values of the credentials that can reach the agent's
	// runs (its keys, the run's token, the tokens of accounts whose memberships reach it), for the
	// run's redaction set.
	CredentialsReaching(ctx context.Context, chain Chain, runID string) ([]SealedCredential, error)

	CreateInvitation(ctx context.Context, inv NewInvitation) (Invitation, error)
	// InvitationByHash finds an invitation by its token's hash; none is ENOTFOUND.
	InvitationByHash(ctx context.Context, hash []byte) (Invitation, error)
	// AcceptInvitation, in one transaction, makes the new account (when the write carries one),
	// marks the invitation accepted and gives the account its role, once: an accepted or expired
	// invitation is ECONFLICT and nothing is written.
	AcceptInvitation(ctx context.Context, w AcceptWrite) (Membership, error)
	// PendingInvitations lists the unexpired, unaccepted invitations of an email.
	PendingInvitations(ctx context.Context, email string, now time.Time) ([]Invitation, error)

	// AppendAudit writes audit rows in one round trip.
	AppendAudit(ctx context.Context, rows []AuditEntry) error
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
}

// Member is a membership with its account, as a scope's member list shows it.
type Member struct {
	Membership
	Email string `json:"email"`
	Name  string `json:"name"`
}

// SealedCredential is one credential value sealed at rest, with the id it was sealed for.
type SealedCredential struct {
	Kind   string
	ID     string
	Sealed []byte
}

// Kinds of object a request can name, for placing it (Placer).
const (
	ObjectOrg        = "org"
	ObjectGuild      = "guild"
	ObjectAgent      = "agent"
	ObjectRun        = "run"
	ObjectConnection = "connection"
	ObjectArtifact   = "artifact" // a collection or a note
	ObjectIssue      = "issue"
	ObjectApproval   = "approval" // an approval request, placed at its agent
)

// Placer places an object: the chain of the scope it belongs to, and its run when it is one. An
// object that does not exist is ENOTFOUND. Where an object sits never changes, so a placement can
// be kept.
type Placer interface {
	Place(ctx context.Context, kind, id string) (Chain, string, error)
}
