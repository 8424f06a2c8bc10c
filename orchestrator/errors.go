// Package orchestrator holds the domain of the guilds orchestrator: scopes, agents, runs, tool calls,
// the error codes every layer speaks, and the interfaces its stores and policies implement.
package orchestrator

import (
	"errors"
	"fmt"
)

// Error codes carried by domain errors; httpapi maps each to one HTTP status.
const (
	ENOTFOUND     = "ENOTFOUND"     // the named object does not exist
	EFORBIDDEN    = "EFORBIDDEN"    // the caller may not do this
	EINVALID      = "EINVALID"      // the input is well-formed but not acceptable
	EMALFORMED    = "EMALFORMED"    // the input could not be parsed at all
	ECONFLICT     = "ECONFLICT"     // the object's state does not allow this (closed run, spent budget)
	EUNAUTHORIZED = "EUNAUTHORIZED" // no or wrong credentials
	EINTERNAL     = "EINTERNAL"     // a fault on our side; details are in the operational log
	EUPSTREAM     = "EUPSTREAM"     // a remote server the orchestrator called answered with an error
	EUNAVAILABLE  = "EUNAVAILABLE"  // the orchestrator's database cannot be reached right now; retry later
	ELIMIT        = "ELIMIT"        // too many attempts or open sessions: wait, or close some, then retry
)

// Error is a domain error: a code and a message written for the caller.
type Error struct {
	Code    string
	Message string
	Fields  map[string]any // extra members of the API's error object (setup_state, missing); nil: none
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any other error,
// and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-facing message of err: the *Error's message, or a generic line
// for internal errors (whose detail belongs in the log, not in the answer).
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error; the details are in the orchestrator log"
}
