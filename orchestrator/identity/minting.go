package identity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Lifetimes of what is minted.
const (
	MaxTokenLife    = 2 * 365 * 24 * time.Hour // the furthest expiry an API token or agent key may ask
	InvitationLife  = 7 * 24 * time.Hour
	DefaultRunToken = 30 * 24 * time.Hour // a run token holds until its run closes, or this long
)

// sealedFor is the additional data a credential's value is sealed with: its kind and id, so a value
// moved to another row does not open.
func sealedFor(kind, id string) []byte { return []byte("identity:" + kind + ":" + id) }

// seal seals a minted value for the redaction of the runs it reaches.
func (s *Service) seal(kind, id, value string) ([]byte, error) {
	if s.Box == nil {
		return nil, orchestrator.Errorf(orchestrator.EINTERNAL, "GUILDS_SECRET_KEY is not set, so a new %s could not be sealed for redaction", kindName(kind))
	}
	return s.Box.Seal([]byte(value), sealedFor(kind, id)), nil
}

// checkExpiry refuses an expiry in the past or too far ahead.
func (s *Service) checkExpiry(at *time.Time) error {
	if at == nil {
		return nil
	}
	now := s.now()
	switch {
	case !at.After(now):
		return orchestrator.Errorf(orchestrator.EINVALID, "expires_at must be in the future, got %s", at.Format(time.RFC3339))
	case at.Sub(now) > MaxTokenLife:
		return orchestrator.Errorf(orchestrator.EINVALID, "expires_at must be within two years, got %s", at.Format(time.RFC3339))
	}
	return nil
}

// TokenRequest is what minting an API token takes.
type TokenRequest struct {
	Name      string
	Role      string      // "" no cap
	Scope     *TokenScope // nil wherever the account reaches
	ScopeAt   orchestrator.Chain
	ExpiresAt *time.Time
}

// TokenScope is the alias the API reads a token's or invitation's scope into.
type TokenScope = orchestrator.TokenScope

// Minting answers: the value is shown once.
type (
	// NewTokenAnswer is a minted API token.
	NewTokenAnswer struct {
		orchestrator.APIToken
		Token string `json:"token"`
	}
	// NewKeyAnswer is a minted agent key.
	NewKeyAnswer struct {
		orchestrator.AgentKey
		Key string `json:"key"`
	}
)

// MintToken makes an API token for the signed-in account of p, no wider than its own reach: the
// scope (placed by req.ScopeAt) must be one it holds a role at, and the role no higher than that.
func (s *Service) MintToken(ctx context.Context, p Principal, req TokenRequest) (NewTokenAnswer, error) {
	if p.Kind != orchestrator.CredentialSession || p.Account == nil {
		return NewTokenAnswer{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "API tokens are made by a signed-in account's session, not by %s", p.Label())
	}
	if err := orchestrator.ValidName("token", req.Name); err != nil {
		return NewTokenAnswer{}, err
	}
	if req.Role != "" && !slices.Contains(orchestrator.Roles, req.Role) {
		return NewTokenAnswer{}, orchestrator.Errorf(orchestrator.EINVALID, "role must be owner, operator or viewer, got %q", req.Role)
	}
	if err := s.checkExpiry(req.ExpiresAt); err != nil {
		return NewTokenAnswer{}, err
	}
	t := orchestrator.APIToken{ID: orchestrator.NewID(orchestrator.PrefixToken), AccountID: p.Account.ID, Name: req.Name, Role: req.Role,
		Scope: req.Scope, ExpiresAt: req.ExpiresAt, CreatedAt: s.now()}
	switch {
	case req.Scope != nil:
		held := p.RoleAt(req.ScopeAt)
		if held == "" && p.RoleWithin(req.ScopeAt) != "" { // an organisation the maker sees through a guild
			return NewTokenAnswer{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "a token cannot be wider than its maker: you hold no role at %s itself; scope it to your guild", describe(req.ScopeAt))
		}
		if held == "" {
			return NewTokenAnswer{}, notFound(Target{Chain: req.ScopeAt})
		}
		if req.Role != "" && orchestrator.RoleRank(req.Role) > orchestrator.RoleRank(held) {
			return NewTokenAnswer{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "a token cannot be wider than its maker: you hold %s at %s, not %s", held, describe(req.ScopeAt), req.Role)
		}
		t.OrgID = req.ScopeAt.OrgID
	case req.Role != "" && p.Admin:
		return NewTokenAnswer{}, orchestrator.Errorf(orchestrator.EINVALID, "an instance admin's token with a role needs a scope ({kind, id}); without role and scope it carries the admin's whole reach")
	}
	m := Mint(PrefixPAT)
	t.Prefix = m.Prefix
	sl, err := s.seal(orchestrator.CredentialToken, t.ID, m.Value)
	if err != nil {
		return NewTokenAnswer{}, err
	}
	stored, err := s.Store.CreateToken(ctx, orchestrator.NewToken{APIToken: t, Hash: m.Hash, Sealed: sl})
	if err != nil {
		return NewTokenAnswer{}, err
	}
	s.Changed(credKey(orchestrator.CredentialToken, t.ID))
	return NewTokenAnswer{APIToken: stored, Token: m.Value}, nil
}

// RevokeToken revokes one of the account's tokens.
func (s *Service) RevokeToken(ctx context.Context, accountID, id string) error {
	if err := s.Store.RevokeToken(ctx, accountID, id, s.now()); err != nil {
		return err
	}
	s.Changed(credKey(orchestrator.CredentialToken, id))
	return nil
}

// MintAgentKey makes a key for a model runtime that drives one agent.
func (s *Service) MintAgentKey(ctx context.Context, p Principal, agent orchestrator.Chain, name string, expires *time.Time) (NewKeyAnswer, error) {
	if err := orchestrator.ValidName("key", name); err != nil {
		return NewKeyAnswer{}, err
	}
	if err := s.checkExpiry(expires); err != nil {
		return NewKeyAnswer{}, err
	}
	by := p.AccountID()
	if by == "" {
		by = p.Kind
	}
	k := orchestrator.AgentKey{ID: orchestrator.NewID(orchestrator.PrefixAgentKey), AgentID: agent.AgentID, GuildID: agent.GuildID, OrgID: agent.OrgID,
		Name: name, CreatedBy: by, ExpiresAt: expires, CreatedAt: s.now()}
	m := Mint(PrefixAgentKey)
	k.Prefix = m.Prefix
	sl, err := s.seal(orchestrator.CredentialAgentKey, k.ID, m.Value)
	if err != nil {
		return NewKeyAnswer{}, err
	}
	stored, err := s.Store.CreateAgentKey(ctx, orchestrator.NewAgentKey{AgentKey: k, Hash: m.Hash, Sealed: sl})
	if err != nil {
		return NewKeyAnswer{}, err
	}
	s.Changed(credKey(orchestrator.CredentialAgentKey, k.ID))
	return NewKeyAnswer{AgentKey: stored, Key: m.Value}, nil
}

// RevokeAgentKey revokes one of the agent's keys.
func (s *Service) RevokeAgentKey(ctx context.Context, agentID, id string) error {
	if err := s.Store.RevokeAgentKey(ctx, agentID, id, s.now()); err != nil {
		return err
	}
	s.Changed(credKey(orchestrator.CredentialAgentKey, id))
	return nil
}

// RunToken is a run's token as its start stores it: the value is answered once.
type RunToken struct {
	Value     string
	Hash      []byte
	Sealed    []byte
	ExpiresAt time.Time
}

// MintRunToken makes the token of a run about to start.
func (s *Service) MintRunToken(runID string) (RunToken, error) {
	m := Mint(PrefixRunToken)
	sl, err := s.seal(orchestrator.CredentialRunToken, runID, m.Value)
	if err != nil {
		return RunToken{}, err
	}
	return RunToken{Value: m.Value, Hash: m.Hash, Sealed: sl, ExpiresAt: s.now().Add(DefaultRunToken)}, nil
}

// Invite makes a single-use invitation of an email to a role at a scope, good for seven days; the
// answer's token goes into the link the invitee follows.
func (s *Service) Invite(ctx context.Context, p Principal, email string, at orchestrator.Chain, role string) (orchestrator.Invitation, string, error) {
	e, err := NormalEmail(email)
	if err != nil {
		return orchestrator.Invitation{}, "", err
	}
	if !slices.Contains(orchestrator.Roles, role) {
		return orchestrator.Invitation{}, "", orchestrator.Errorf(orchestrator.EINVALID, "role must be owner, operator or viewer, got %q", role)
	}
	by := p.AccountID()
	if by == "" {
		by = p.Kind
	}
	now := s.now()
	inv := orchestrator.Invitation{ID: orchestrator.NewID(orchestrator.PrefixInvitation), Email: e, Scope: TokenScope{Kind: at.Scope, ID: at.ID()},
		OrgID: at.OrgID, Role: role, InvitedBy: by, CreatedAt: now, ExpiresAt: now.Add(InvitationLife)}
	m := Mint(PrefixInvitation)
	stored, err := s.Store.CreateInvitation(ctx, orchestrator.NewInvitation{Invitation: inv, Hash: m.Hash})
	if err != nil {
		return stored, "", err
	}
	return stored, m.Value, nil
}

// Accepting is what accepting an invitation takes: the account's name and password when the email
// has no account yet, or that account's password when it has.
type Accepting struct {
	Token    string
	Name     string
	Password string
}

// Accept takes an invitation: the email's account (made now when it has none) gets its role, once.
// It answers the account, which the caller signs in.
func (s *Service) Accept(ctx context.Context, req Accepting) (orchestrator.Account, error) {
	inv, err := s.invitation(ctx, req.Token)
	if err != nil {
		return orchestrator.Account{}, err
	}
	st, err := s.Store.SignInState(ctx, inv.Email)
	if err != nil {
		return orchestrator.Account{}, fmt.Errorf("look up the invited email: %w", err)
	}
	w := orchestrator.AcceptWrite{InvitationID: inv.ID, Now: s.now()}
	a := st.Account
	if a == nil {
		if req.Password == "" {
			return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EINVALID, "password is required to make the account")
		}
		if err := orchestrator.ValidName("account", req.Name); err != nil {
			return orchestrator.Account{}, err
		}
		if err := CheckPassword(req.Password, inv.Email, req.Name); err != nil {
			return orchestrator.Account{}, err
		}
		a = &orchestrator.Account{ID: orchestrator.NewID(orchestrator.PrefixAccount), Email: inv.Email, Name: req.Name, HasPassword: true, CreatedAt: w.Now, UpdatedAt: w.Now}
		w.NewAccount, w.PasswordHash = a, HashPassword(req.Password)
	} else if !VerifyPassword(st.PasswordHash, req.Password) {
		return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "%s already has an account: accept with its password", inv.Email)
	}
	w.AccountID = a.ID
	if _, err := s.Store.AcceptInvitation(ctx, w); err != nil {
		return orchestrator.Account{}, err
	}
	s.Changed(accountKey(a.ID))
	return *a, nil
}

// invitation finds an invitation by its token and checks it is still open.
func (s *Service) invitation(ctx context.Context, token string) (orchestrator.Invitation, error) {
	if len(token) != len(PrefixInvitation)+secretLen || token[:len(PrefixInvitation)] != PrefixInvitation {
		return orchestrator.Invitation{}, orchestrator.Errorf(orchestrator.EINVALID, "token must be the invitation's token (%s…) from its link", PrefixInvitation)
	}
	inv, err := s.Store.InvitationByHash(ctx, Hash(token))
	if err != nil {
		if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
			return inv, orchestrator.Errorf(orchestrator.ENOTFOUND, "no such invitation: ask for a new link")
		}
		return inv, err
	}
	switch {
	case inv.AcceptedAt != nil:
		return inv, orchestrator.Errorf(orchestrator.ECONFLICT, "this invitation was already accepted; sign in instead")
	case !s.now().Before(inv.ExpiresAt):
		return inv, orchestrator.Errorf(orchestrator.ECONFLICT, "this invitation expired at %s; ask for a new link", inv.ExpiresAt.Format(time.RFC3339))
	}
	return inv, nil
}
