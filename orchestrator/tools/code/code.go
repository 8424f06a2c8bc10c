// Package code declares the eleven code tools (shell, files, search, graph); each call runs
// /usr/local/bin/guilds-code in the agent's sandbox per PROTOCOL.md.
package code

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// HelperTimeout bounds one guilds-code process: the longest tool limit (a Graft-backed call waits up
// to 11 minutes; shell at most 600 s plus its 2 s kill grace) plus a margin.
const HelperTimeout = 12 * time.Minute

// Tools registers the code tools over a sandbox provider.
type Tools struct {
	Sandbox sandbox.Provider
}

// Names lists the eleven code tools, in the spec's order.
var Names = []string{"shell", "shell_status", "file_read", "file_edit", "file_write",
	"code_search", "code_match", "code_map", "code_find", "code_outline", "code_callers"}

// Register adds the eleven code tools, Family orchestrator.FamilyCode.
func (t *Tools) Register(reg *registry.Registry) error {
	h := &sandbox.HelperTools{Provider: t.Sandbox, Helper: sandbox.CodeHelper, Timeout: HelperTimeout}
	for _, name := range Names {
		d := decls[name]
		handler := h.Handler(name)
		if name == "file_read" {
			handler = countBytes(handler)
		}
		if err := reg.Register(registry.Tool{Name: name, Description: d.desc, Schema: json.RawMessage(d.schema),
			Handler: handler, Family: orchestrator.FamilyCode}); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// countBytes records the bytes a file_read returned as the call's "bytes" metadata, which the
// run's exploration figures (read_bytes_unedited) sum.
func countBytes(next registry.Handler) registry.Handler {
	return func(ctx context.Context, call *registry.Call) (string, error) {
		out, err := next(ctx, call)
		if err == nil {
			call.Meta["bytes"] = len(out)
		}
		return out, err
	}
}

type decl struct{ desc, schema string }

// decls hold each tool's description and explicit JSON Schema, matching guilds-code's arguments.
var decls = map[string]decl{
	"shell": {
		"Run a bash command in your workspace (stdin closed, environment changes do not persist; a cd does). " +
			"Returns combined stdout and stderr, shaped: output past the cap keeps its first 2 KiB and last 6 KiB around a line naming the full log under /home/agent/.runs/. " +
			"Adds exit_code: N when not 0. A command past timeout_seconds is stopped with exit_code 124. With background: true it runs on in its own session; check it with shell_status.",
		`{"type":"object","properties":{
"command":{"type":"string","minLength":1,"description":"The bash command line to run."},
"timeout_seconds":{"type":"integer","minimum":1,"maximum":600,"description":"Seconds before the command is stopped (default 120, at most 600)."},
"background":{"type":"boolean","description":"Run in the background and return its id (b1, b2, …) at once."}},
"required":["command"],"additionalProperties":false}`,
	},
	"shell_status": {
		"Without id: the background commands with their state. With id: that command's state, exit code and the last 40 lines of its log; stop: true ends it.",
		`{"type":"object","properties":{
"id":{"type":"string","description":"A background command id such as b1."},
"stop":{"type":"boolean","description":"End the command named by id."}},
"additionalProperties":false}`,
	},
	"file_read": {
		"Read numbered lines of a file under /home/agent, under a 'lines a–b of n' header. Lines longer than 400 characters are clipped; a binary file is named with its size. " +
			"A range you already read unchanged in this run returns one line pointing at that earlier result.",
		`{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File path, relative to the working directory or absolute under /home/agent."},
"offset":{"type":"integer","minimum":1,"description":"First line to return (default 1)."},
"limit":{"type":"integer","minimum":1,"maximum":500,"description":"Number of lines (default 200, at most 500)."}},
"required":["path"],"additionalProperties":false}`,
	},
	"file_edit": {
		"Replace an exact string in a file, atomically, keeping its mode. A string that is missing, or occurs more than once without replace_all, is an error and changes nothing. Returns edited <path> (+a −b).",
		`{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File to edit."},
"old_string":{"type":"string","description":"The exact text to replace, with enough context to be unique."},
"new_string":{"type":"string","description":"The replacement text."},
"replace_all":{"type":"boolean","description":"Replace every occurrence."}},
"required":["path","old_string","new_string"],"additionalProperties":false}`,
	},
	"file_write": {
		"Create or replace a file with content, atomically; missing folders are created and an existing file keeps its mode. Returns wrote <path> (n lines).",
		`{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File to write."},
"content":{"type":"string","description":"The whole new content of the file."}},
"required":["path","content"],"additionalProperties":false}`,
	},
	"code_search": {
		"Text search with ripgrep (respects .gitignore), or symbols mode over the code graph. Modes: files (default: matching paths with counts, at most 30), " +
			"content (path:line: text, context 0 to 5 lines, at most 40 lines, 10 matches per file), symbols (hits grouped under their enclosing function or class). Paths are relative to the working directory.",
		`{"type":"object","properties":{
"pattern":{"type":"string","minLength":1,"description":"Regular expression (or literal text with fixed)."},
"path":{"type":"string","description":"Folder or file to search (default the working directory)."},
"glob":{"type":"string","description":"Only files matching this glob, e.g. *.go."},
"mode":{"type":"string","enum":["files","content","symbols"],"description":"files (default), content or symbols."},
"fixed":{"type":"boolean","description":"Treat pattern as literal text."},
"ignore_case":{"type":"boolean","description":"Match case-insensitively."},
"context":{"type":"integer","minimum":0,"maximum":5,"description":"Context lines around each match in content mode (0 to 5)."},
"limit":{"type":"integer","minimum":1,"maximum":40,"description":"Show fewer files or lines than the mode's cap (1 to 40)."}},
"required":["pattern"],"additionalProperties":false}`,
	},
	"code_match": {
		"Structural search with ast-grep: a syntax pattern (a call shape, a declaration form) that never matches inside comments or strings, e.g. fmt.Errorf($$$ARGS). Returns path:line: first matched line.",
		`{"type":"object","properties":{
"pattern":{"type":"string","minLength":1,"description":"Code pattern; $NAME matches one node, $$$NAME any number."},
"lang":{"type":"string","description":"Language of the pattern (default: from each file's extension)."},
"path":{"type":"string","description":"Folder or file to search (default the working directory)."},
"limit":{"type":"integer","minimum":1,"maximum":100,"description":"Matches to show (default 30, at most 100)."}},
"required":["pattern"],"additionalProperties":false}`,
	},
	"code_map": {
		"Map of a repository under /home/agent/repos: directory clusters with file and symbol counts and their most referenced symbols, then the most referenced symbols overall. A first graph build can take minutes.",
		`{"type":"object","properties":{
"repo":{"type":"string","description":"Repository folder name under /home/agent/repos (default: the one holding the working directory, else the only one)."}},
"additionalProperties":false}`,
	},
	"code_find": {
		"Find the symbols and files that answer a question, ranked, with path:line and their signature; with source, up to 8 lines of each.",
		`{"type":"object","properties":{
"question":{"type":"string","minLength":1,"description":"What you are looking for, in words or identifiers."},
"in":{"type":"string","description":"Narrow to a folder or file of the repository."},
"source":{"type":"boolean","description":"Include up to 8 lines of each symbol's source."},
"limit":{"type":"integer","minimum":1,"maximum":20,"description":"Results (default 8, at most 20)."}},
"required":["question"],"additionalProperties":false}`,
	},
	"code_outline": {
		"Every signature in a file with its line span, without bodies.",
		`{"type":"object","properties":{
"path":{"type":"string","minLength":1,"description":"File to outline."}},
"required":["path"],"additionalProperties":false}`,
	},
	"code_callers": {
		"What references a symbol (direction in) or what it references (direction out), indented by depth, with path:line.",
		`{"type":"object","properties":{
"symbol":{"type":"string","minLength":1,"description":"Function, method or type name (Type.Method for a method)."},
"direction":{"type":"string","enum":["in","out"],"description":"in (default): its callers; out: what it calls."},
"depth":{"type":"integer","minimum":1,"maximum":3,"description":"Levels to follow (1 to 3, default 1)."},
"in":{"type":"string","description":"Narrow to a folder or file of the repository."}},
"required":["symbol"],"additionalProperties":false}`,
	},
}
