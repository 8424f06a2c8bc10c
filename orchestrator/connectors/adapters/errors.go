package adapters

import (
	"context"
	"errors"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// Kind classifies a provider failure.
type Kind int

// The kinds of provider failure.
const (
	KindUpstream    Kind = iota // any other refusal of the provider (a 4xx without a kind of its own)
	KindRejected                // 401/403: the credentials were refused; reconnect the login
	KindRateLimited             // 429: retry after the provider's delay
	KindNotFound                // 404: the named object does not exist
	KindDown                    // 5xx, timeout or unreachable: the provider is down
	KindMalformed               // the answer could not be read (not JSON, wrong shape, over 10 MiB)
	KindPlan                    // the login's plan does not include this tool
	KindInvalid                 // the arguments or the catalog row cannot make a request
)

// Error is a provider failure as one line: its Error text is safe to show (credentials scrubbed).
type Error struct {
	Kind       Kind
	Provider   string // the provider's display name, e.g. CoinGecko
	Msg        string // what happened, without the provider's name
	RetryAfter string // KindRateLimited: the provider's Retry-After, when it sent one
	KeyInvalid bool   // KindRejected: the provider says the key itself is invalid (a 401), not only this call
	Status     int    // the provider's HTTP status, 0 when it gave none
}

// StatusOf returns the provider's HTTP status carried by err, 0 when there is none.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Error returns "<Provider>: <message>" on one line.
func (e *Error) Error() string {
	msg := strings.Join(strings.Fields(e.Msg), " ")
	if e.Provider == "" {
		return msg
	}
	return e.Provider + ": " + msg
}

// Unwrap exposes the domain error the kind maps to, so orchestrator.ErrorCode sees a code:
// rejected and invalid are EINVALID (422), not found ENOTFOUND, everything else EUPSTREAM (502).
func (e *Error) Unwrap() error {
	code := orchestrator.EUPSTREAM
	switch e.Kind {
	case KindRejected, KindInvalid:
		code = orchestrator.EINVALID
	case KindNotFound:
		code = orchestrator.ENOTFOUND
	}
	return &orchestrator.Error{Code: code, Message: e.Error()}
}

// KindOf returns the kind of the first *Error in err's chain, and false when there is none.
func KindOf(err error) (Kind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

// IsRejected reports whether err is a refusal of the login's credentials.
func IsRejected(err error) bool { k, ok := KindOf(err); return ok && k == KindRejected }

// IsDown reports whether err says the provider is down (timeout, 5xx, unreachable).
func IsDown(err error) bool { k, ok := KindOf(err); return ok && k == KindDown }

// Invalid returns an argument error of the provider.
func Invalid(provider, msg string) error {
	return &Error{Kind: KindInvalid, Provider: provider, Msg: msg}
}

// scrub replaces every secret in s by "[redacted]".
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// Message is the caller-facing line of a failed call: an *Error's text, and for any other error
// (a canceled call, a fault of ours) a generic line, never a Go error string.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	if errors.Is(err, context.Canceled) {
		return "the call was canceled"
	}
	return "the adapter call failed inside the orchestrator; the details are in its log"
}

// Result is what a tool call answers: the output, or "ERROR: " and Message(err).
func Result(out string, err error) string {
	if err != nil {
		return "ERROR: " + Message(err)
	}
	return out
}

// Disconnects reports whether err should mark the connection disconnected: a 401 where the
// provider says the key itself is invalid, not a refusal of one call (403, a plan error).
func Disconnects(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindRejected && e.KeyInvalid
}
