// Package secrets holds the agent secrets: secret_store and secret_request, the operator's
// service behind /api/agents/{id}/secrets, the run redaction source of granted values, and the
// environment of the agent's sandbox commands (shell, script_run), where each granted secret is a
// variable of its name. Values are sealed at rest (package sealed) and opened only in memory; no
// tool or endpoint returns one.
package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// MaxValueBytes is the largest secret value accepted.
const MaxValueBytes = 16 << 10

// MinValueBytes is the shortest secret value accepted: a value is masked wherever it appears in a
// result, and masking a shorter one would mask ordinary text.
const MinValueBytes = 8

// MaxReasonChars is the most characters a secret_request reason may hold.
const MaxReasonChars = 400

// namePattern is what a secret name must match: an environment-variable-like identifier.
var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// reservedNames are variables the sandbox, its helpers or git set in a command's environment; a
// secret of that name would replace them, so none may be stored.
var reservedNames = map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"TMPDIR": true, "LANG": true, "PWD": true, "OLDPWD": true, "IFS": true, "ENV": true, "SHLVL": true, "TERM": true,
	"PAGER": true, "NO_COLOR": true, "DEBIAN_FRONTEND": true, "CODE_RESULT_MAX_BYTES": true, "GH_TOKEN": true}

// reservedPrefixes start the names of reserved variable families (the orchestrator's, the dynamic
// linker's, bash's, the locale's, git's, Python's).
var reservedPrefixes = []string{"GUILD_", "GUILDS_", "LD_", "BASH", "LC_", "GIT_", "PYTHON"}

// Reserved reports whether a secret name is a variable the sandbox's commands already get.
func Reserved(name string) bool {
	if reservedNames[name] {
		return true
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Store is what secrets need (postgres.Store implements it).
type Store interface {
	PutSealedSecret(ctx context.Context, agentID, name string, sealed []byte, at time.Time) (orchestrator.SecretInfo, error)
	ListSecrets(ctx context.Context, agentID string) ([]orchestrator.SecretInfo, error)
	SealedSecrets(ctx context.Context, agentID string) (map[string][]byte, error)
	DeleteSecret(ctx context.Context, agentID, name string) error
	CreateSecretRequest(ctx context.Context, r orchestrator.SecretRequest) error
	ListSecretRequests(ctx context.Context, agentID, status string) ([]orchestrator.SecretRequest, error)
}

// Service stores, lists and deletes agent secrets, serves the two tools, and yields a run's granted
// values for redaction. Box nil means GUILDS_SECRET_KEY is unset: storing is refused.
type Service struct {
	Store Store
	Box   *sealed.Box
	Now   func() time.Time
}

var _ orchestrator.RunSecrets = (*Service)(nil)

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// sealedFor is the additional data a secret is sealed with: a sealed value copied onto another
// agent or name does not open there.
func sealedFor(agentID, name string) []byte {
	return []byte("agent_secrets:" + agentID + "/" + name)
}

// CheckName validates a secret name.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return orchestrator.Errorf(orchestrator.EINVALID, "secret name %q must match %s (a letter or _, then letters, digits or _, at most 64), e.g. %s", clip(name), namePattern, SuggestName(name))
	}
	return nil
}

// checkNewName validates the name of a secret to store or ask for: a valid name, not a variable the
// sandbox already sets (the error suggests one that is free).
func checkNewName(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if Reserved(name) {
		return orchestrator.Errorf(orchestrator.EINVALID, "secret name %s is reserved: shell and script_run commands get the secret as that variable, which the sandbox sets itself; pick another name, e.g. %s", name, SuggestName(name))
	}
	return nil
}

// SuggestName turns a refused secret name into one that is valid and free: upper case, every
// other character an underscore, a letter first, MY_ before a reserved name, at most 64.
func SuggestName(name string) string {
	n := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, strings.ToUpper(name))
	n = strings.TrimLeft(n, "_")
	if n == "" {
		return "SERVICE_API_KEY"
	}
	if n[0] < 'A' || n[0] > 'Z' || Reserved(n) {
		n = "MY_" + n
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// checkValue validates a secret value.
func checkValue(v string) error {
	switch {
	case v == "":
		return orchestrator.Errorf(orchestrator.EINVALID, "value is empty; a secret needs a value")
	case len(v) < MinValueBytes:
		return orchestrator.Errorf(orchestrator.EINVALID, "value is %d bytes; a secret is at least %d bytes, since its value is masked wherever it appears in a result and masking a shorter one would mask ordinary text", len(v), MinValueBytes)
	case len(v) > MaxValueBytes:
		return orchestrator.Errorf(orchestrator.EINVALID, "value is %d bytes; a secret is at most %d bytes", len(v), MaxValueBytes)
	case !utf8.ValidString(v):
		return orchestrator.Errorf(orchestrator.EINVALID, "value is not valid UTF-8 text; encode binary secrets (base64)")
	case strings.IndexByte(v, 0) >= 0:
		// An environment variable cannot hold a NUL: every shell and script_run would fail to start.
		return orchestrator.NULError("value")
	case strings.TrimSpace(v) == "":
		return orchestrator.Errorf(orchestrator.EINVALID, "value is only whitespace")
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Put seals value and stores it as the agent's secret name, answering the agent's pending requests
// for that name. The answer never holds the value.
func (s *Service) Put(ctx context.Context, agentID, name, value string) (orchestrator.SecretInfo, error) {
	if err := checkNewName(name); err != nil {
		return orchestrator.SecretInfo{}, err
	}
	if err := checkValue(value); err != nil {
		return orchestrator.SecretInfo{}, err
	}
	if s.Box == nil {
		return orchestrator.SecretInfo{}, orchestrator.Errorf(orchestrator.ECONFLICT, "secrets cannot be stored: %s is not set on the orchestrator; set it (openssl rand -base64 32; make run keeps one under .data/)", sealed.KeyVar)
	}
	return s.Store.PutSealedSecret(ctx, agentID, name, s.Box.Seal([]byte(value), sealedFor(agentID, name)), s.now())
}

// List returns the agent's secret names and its pending requests.
func (s *Service) List(ctx context.Context, agentID string) ([]orchestrator.SecretInfo, []orchestrator.SecretRequest, error) {
	names, err := s.Store.ListSecrets(ctx, agentID)
	if err != nil {
		return nil, nil, err
	}
	reqs, err := s.Store.ListSecretRequests(ctx, agentID, orchestrator.SecretRequestPending)
	if err != nil {
		return nil, nil, err
	}
	return names, reqs, nil
}

// Delete removes one of the agent's secrets.
func (s *Service) Delete(ctx context.Context, agentID, name string) error {
	if err := CheckName(name); err != nil {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "secret %q not found", clip(name))
	}
	return s.Store.DeleteSecret(ctx, agentID, name)
}

// RunSecretValues opens every secret granted to the run's agent, in memory only, sorted by name.
func (s *Service) RunSecretValues(ctx context.Context, run orchestrator.Run) ([]string, error) {
	names, vals, err := s.open(ctx, run.AgentID, "redaction")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, vals[n])
	}
	return out, nil
}

// SandboxEnv returns the calling agent's granted secrets as NAME=value for the environment of a
// command in its sandbox (shell, script_run), sorted by name, leaving out a reserved name stored
// before names were checked for it and a value holding a NUL stored before values were (no process
// can start with one in its environment). Their values join the call's redaction (c.Secrets), so a
// secret the operator stored after the run started is masked too.
func (s *Service) SandboxEnv(ctx context.Context, c *registry.Call) ([]string, error) {
	names, vals, err := s.open(ctx, c.AgentID, "the sandbox")
	if err != nil {
		return nil, err
	}
	var env []string
	for _, n := range names {
		c.Secrets = append(c.Secrets, vals[n])
		if !Reserved(n) && strings.IndexByte(vals[n], 0) < 0 {
			env = append(env, n+"="+vals[n])
		}
	}
	return env, nil
}

// open opens every secret of the agent, in memory only: their names sorted, and their values.
// forWhat names the use in the error of a box without the key.
func (s *Service) open(ctx context.Context, agentID, forWhat string) ([]string, map[string]string, error) {
	all, err := s.Store.SealedSecrets(ctx, agentID)
	if err != nil {
		return nil, nil, err
	}
	if len(all) == 0 {
		return nil, nil, nil
	}
	if s.Box == nil {
		return nil, nil, fmt.Errorf("agent %s has stored secrets but %s is not set, so they cannot be opened for %s", agentID, sealed.KeyVar, forWhat)
	}
	names := make([]string, 0, len(all))
	vals := make(map[string]string, len(all))
	for n, b := range all {
		plain, err := s.Box.Open(b, sealedFor(agentID, n))
		if err != nil {
			return nil, nil, fmt.Errorf("open secret %s of agent %s: %w", n, agentID, err)
		}
		names = append(names, n)
		vals[n] = string(plain)
	}
	sort.Strings(names)
	return names, vals, nil
}

// Register adds secret_store and secret_request to reg, in the secrets family.
func (s *Service) Register(reg *registry.Registry) error {
	for _, tool := range []registry.Tool{
		{Name: "secret_store", Description: "Save a value you produced (an API key, a token, a password) as a secret granted to you. " +
			"The value is encrypted at rest and redacted from every tool result from now on; no tool shows it back. " +
			"Your shell and script_run commands get it as an environment variable of its name (e.g. $SERVICE_API_KEY).",
			Schema: json.RawMessage(storeSchema), Handler: s.store, Transactional: true, SecretArgs: []string{"value"}},
		{Name: "secret_request", Description: "Ask the operator to give you a secret you need (for example an API key). " +
			"Name it and say why; once the operator stores it, your shell and script_run commands get it as an environment variable of that name (e.g. $STRIPE_API_KEY).",
			Schema: json.RawMessage(requestSchema), Handler: s.request, Transactional: true},
	} {
		tool.Family = orchestrator.FamilySecrets
		if err := reg.Register(tool); err != nil {
			return fmt.Errorf("register secret tools: %w", err)
		}
	}
	return nil
}

const storeSchema = `{"type":"object","properties":{
"name":{"type":"string","description":"secret name, letters, digits and _, e.g. SERVICE_API_KEY"},
"value":{"type":"string","description":"the secret value"}},
"required":["name","value"],"additionalProperties":false}`

const requestSchema = `{"type":"object","properties":{
"name":{"type":"string","description":"secret name you need, letters, digits and _, e.g. STRIPE_API_KEY"},
"reason":{"type":"string","description":"why you need it, one line (at most 400 characters)"}},
"required":["name","reason"],"additionalProperties":false}`

func (s *Service) store(ctx context.Context, c *registry.Call) (string, error) {
	var in struct{ Name, Value string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("secret_store arguments: %w", err)
	}
	if len(in.Value) >= MinValueBytes { // a shorter one is refused, and masking it would mask ordinary text
		c.Secrets = append(c.Secrets, in.Value) // redacted from this call's stored arguments and every later result
	}
	info, err := s.Put(ctx, c.AgentID, in.Name, in.Value)
	if err != nil {
		return "", err
	}
	c.Meta["secret"] = info.Name
	return fmt.Sprintf("stored secret %s (granted to you): shell and script_run commands get it as $%s; its value is masked in every result", info.Name, info.Name), nil
}

func (s *Service) request(ctx context.Context, c *registry.Call) (string, error) {
	var in struct{ Name, Reason string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("secret_request arguments: %w", err)
	}
	if err := checkNewName(in.Name); err != nil {
		return "", err
	}
	reason := strings.TrimSpace(in.Reason)
	if reason == "" {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "reason is empty; say in one line why you need %s", in.Name)
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonChars {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "reason is %d characters; at most %d", n, MaxReasonChars)
	}
	r := orchestrator.SecretRequest{ID: orchestrator.NewID(orchestrator.PrefixSecretRequest), AgentID: c.AgentID, RunID: c.RunID,
		Name: in.Name, Reason: reason, Status: orchestrator.SecretRequestPending, CreatedAt: s.now()}
	if err := s.Store.CreateSecretRequest(ctx, r); err != nil {
		return "", err
	}
	c.Meta["secret_request_id"] = r.ID
	return fmt.Sprintf("asked the operator for secret %s (request %s); once they store it, it is granted to you and shell and script_run commands get it as $%s", in.Name, r.ID, in.Name), nil
}
