package orchestrator

import "encoding/json"

// Exploration measures how a coding run found its way before changing code (the spec's
// "Exploration"): whether the search tools pay for themselves.
type Exploration struct {
	// CallsBeforeFirstEdit counts the tool calls before the run's first successful file_edit or
	// file_write; nil until there is one.
	CallsBeforeFirstEdit *int `json:"calls_before_first_edit"`
	// ReadBytesUnedited sums the bytes file_read returned from files the run never edited.
	ReadBytesUnedited int64 `json:"read_bytes_unedited"`
}

// Explore computes a run's exploration from its calls in seq order. A file is named by the path
// its calls' metadata records; file_read's bytes are its metadata's "bytes" (the helper's text).
func Explore(calls []ToolCall) Exploration {
	var e Exploration
	edited := map[string]bool{}
	type read struct {
		path  string
		bytes int64
	}
	var reads []read
	for i, c := range calls {
		var m struct {
			Path  string `json:"path"`
			Bytes int64  `json:"bytes"`
		}
		_ = json.Unmarshal(c.Metadata, &m) // metadata a call could not encode counts as naming no file
		switch c.Name {
		case "file_edit", "file_write":
			if c.IsError {
				continue
			}
			if e.CallsBeforeFirstEdit == nil {
				n := i
				e.CallsBeforeFirstEdit = &n
			}
			if m.Path != "" {
				edited[m.Path] = true
			}
		case "file_read":
			if !c.IsError && m.Path != "" {
				reads = append(reads, read{m.Path, m.Bytes})
			}
		}
	}
	for _, r := range reads {
		if !edited[r.path] {
			e.ReadBytesUnedited += r.bytes
		}
	}
	return e
}
