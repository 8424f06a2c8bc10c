package identity

import (
	"context"
	"slices"

	"github.com/guildsai/guilds/orchestrator"
)

// NewAccount is what creating an account takes.
type NewAccount struct {
	Email         string
	Name          string
	Password      string // "" makes an account that signs in by single sign-on (or sets one later)
	InstanceAdmin bool
}

// CreateAccount checks and stores a new account (the instance admin's route).
func (s *Service) CreateAccount(ctx context.Context, req NewAccount) (orchestrator.Account, error) {
	email, err := NormalEmail(req.Email)
	if err != nil {
		return orchestrator.Account{}, err
	}
	if err := orchestrator.ValidName("account", req.Name); err != nil {
		return orchestrator.Account{}, err
	}
	var hash string
	if req.Password != "" {
		if err := CheckPassword(req.Password, email, req.Name); err != nil {
			return orchestrator.Account{}, err
		}
		hash = HashPassword(req.Password)
	}
	now := s.now()
	a := orchestrator.Account{ID: orchestrator.NewID(orchestrator.PrefixAccount), Email: email, Name: req.Name,
		InstanceAdmin: req.InstanceAdmin, HasPassword: hash != "", CreatedAt: now, UpdatedAt: now}
	return s.Store.CreateAccount(ctx, a, hash)
}

// AccountChange is an edit of an account: nil fields stay.
type AccountChange struct {
	Name          *string
	Email         *string
	Password      *string
	InstanceAdmin *bool
	Deactivate    bool // signs every session out too
	Reactivate    bool
}

// UpdateAccount applies an edit; the account's cached credentials are dropped at once.
func (s *Service) UpdateAccount(ctx context.Context, id string, ch AccountChange) (orchestrator.Account, error) {
	var p orchestrator.AccountPatch
	cur, err := s.Store.GetAccount(ctx, id)
	if err != nil {
		return cur, err
	}
	email, name := cur.Email, cur.Name
	if ch.Email != nil {
		e, err := NormalEmail(*ch.Email)
		if err != nil {
			return cur, err
		}
		p.Email, email = &e, e
	}
	if ch.Name != nil {
		if err := orchestrator.ValidName("account", *ch.Name); err != nil {
			return cur, err
		}
		p.Name, name = ch.Name, *ch.Name
	}
	if ch.Password != nil {
		if err := CheckPassword(*ch.Password, email, name); err != nil {
			return cur, err
		}
		h := HashPassword(*ch.Password)
		p.PasswordHash = &h
	}
	p.InstanceAdmin, p.Deactivate, p.Reactivate = ch.InstanceAdmin, ch.Deactivate, ch.Reactivate
	a, err := s.Store.UpdateAccount(ctx, id, p, s.now())
	if err != nil {
		return a, err
	}
	s.Changed(accountKey(id))
	return a, nil
}

// SetMember gives an account a role at an organisation or guild (the chain places the scope). A
// deactivated or unknown account is ENOTFOUND.
func (s *Service) SetMember(ctx context.Context, at orchestrator.Chain, accountID, role string) (orchestrator.Membership, error) {
	if !slices.Contains(orchestrator.Roles, role) {
		return orchestrator.Membership{}, orchestrator.Errorf(orchestrator.EINVALID, "role must be owner, operator or viewer, got %q", role)
	}
	if at.Scope != orchestrator.ScopeOrg && at.Scope != orchestrator.ScopeGuild {
		return orchestrator.Membership{}, orchestrator.Errorf(orchestrator.EINVALID, "members belong to an organisation or a guild")
	}
	a, err := s.Store.GetAccount(ctx, accountID)
	if err != nil {
		return orchestrator.Membership{}, err
	}
	if a.Deactivated {
		return orchestrator.Membership{}, orchestrator.Errorf(orchestrator.ECONFLICT, "account %s is deactivated; reactivate it first", accountID)
	}
	m, err := s.Store.PutMembership(ctx, orchestrator.Membership{AccountID: accountID, Scope: at.Scope, ScopeID: at.ID(), OrgID: at.OrgID, Role: role, CreatedAt: s.now()})
	if err != nil {
		return m, err
	}
	s.Changed(accountKey(accountID))
	return m, nil
}

// RemoveMember takes an account's role at the scope away.
func (s *Service) RemoveMember(ctx context.Context, at orchestrator.Chain, accountID string) error {
	if err := s.Store.DeleteMembership(ctx, accountID, at.Scope, at.ID()); err != nil {
		return err
	}
	s.Changed(accountKey(accountID))
	return nil
}
