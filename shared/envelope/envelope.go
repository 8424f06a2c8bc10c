// Package envelope holds the helper request and reply types of PROTOCOL.md and their encodings.
package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxInlineRequest is the largest base64 request passed on the command line; larger ones go through a request file.
const MaxInlineRequest = 64 << 10

// Request is one tool call handed to a helper.
type Request struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
	RunID  string          `json:"run_id"`
	CallID string          `json:"call_id"`
	Seq    int64           `json:"seq"`
}

// Reply is the envelope a helper writes on standard output.
type Reply struct {
	Text  string         `json:"text,omitempty"`
	Error string         `json:"error,omitempty"`
	Meta  map[string]any `json:"meta"`
	// Image is a picture the call produced besides its text (browser_screenshot's JPEG). The
	// orchestrator hands it to clients that show pictures (MCP) and never stores it.
	Image *Image `json:"image,omitempty"`
}

// Image is a picture in a reply: its MIME type and its bytes (base64 in the JSON).
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// Failed reports whether the reply carries a tool error.
func (r Reply) Failed() bool { return r.Error != "" }

// Errorf builds a failed reply with the given message and metadata (nil becomes empty).
func Errorf(meta map[string]any, format string, a ...any) Reply {
	if meta == nil {
		meta = map[string]any{}
	}
	return Reply{Error: fmt.Sprintf(format, a...), Meta: meta}
}

// ValidID reports whether s is a run or call id: [A-Za-z0-9_-]{1,64}.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks the fields every request must carry.
func (r *Request) Validate() error {
	if r.Tool == "" {
		return errors.New("request has no tool name")
	}
	if !ValidID(r.RunID) {
		return fmt.Errorf("run_id %q is invalid: use 1 to 64 of A-Z a-z 0-9 _ -", r.RunID)
	}
	if !ValidID(r.CallID) {
		return fmt.Errorf("call_id %q is invalid: use 1 to 64 of A-Z a-z 0-9 _ -", r.CallID)
	}
	if r.Seq < 0 {
		return fmt.Errorf("seq %d is negative", r.Seq)
	}
	if len(r.Args) == 0 || bytes.Equal(bytes.TrimSpace(r.Args), []byte("null")) {
		r.Args = json.RawMessage("{}")
	}
	if a := bytes.TrimSpace(r.Args); len(a) == 0 || a[0] != '{' {
		return errors.New("request args must be a JSON object of named arguments")
	}
	return nil
}

// EncodeRequest returns the standard base64 of the request JSON (args kept as sent: no HTML escaping).
func EncodeRequest(r Request) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", fmt.Errorf("encode request: %w", err)
	}
	return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// DecodeRequest parses a base64 request argument and validates it.
func DecodeRequest(arg string) (Request, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(arg))
	if err != nil {
		return Request{}, fmt.Errorf("request is not standard base64: %w", err)
	}
	return ParseRequestJSON(raw)
}

// ParseRequestJSON parses plain request JSON, refusing unknown fields, and validates it.
func ParseRequestJSON(raw []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("request is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, errors.New("request has trailing data after its JSON object")
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// RequestsDir is the folder under runDir that holds request files.
func RequestsDir(runDir string) string { return filepath.Join(runDir, "requests") }

// ReadRequestFile reads and deletes a request file, refusing any path outside runDir/requests.
func ReadRequestFile(path, runDir string) (Request, error) {
	dir, err := filepath.Abs(RequestsDir(runDir))
	if err != nil {
		return Request{}, fmt.Errorf("resolve requests folder: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Request{}, fmt.Errorf("resolve request file: %w", err)
	}
	if filepath.Dir(abs) != dir {
		return Request{}, fmt.Errorf("request file %s is outside %s", path, dir)
	}
	// Refuse links: the file must be a regular file the orchestrator wrote there.
	fi, err := os.Lstat(abs)
	if err != nil {
		return Request{}, fmt.Errorf("request file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Request{}, fmt.Errorf("request file %s is not a regular file", path)
	}
	raw, err := os.ReadFile(abs)
	if err != nil {
		return Request{}, fmt.Errorf("read request file: %w", err)
	}
	if err := os.Remove(abs); err != nil {
		return Request{}, fmt.Errorf("delete request file: %w", err)
	}
	return ParseRequestJSON(raw)
}

// ParseInvocation reads the request from a helper's arguments: <REQ> or --request-file <PATH>.
func ParseInvocation(args []string, runDir string) (Request, error) {
	switch {
	case len(args) == 1 && args[0] != "--request-file" && !strings.HasPrefix(args[0], "-"):
		return DecodeRequest(args[0])
	case len(args) == 2 && args[0] == "--request-file":
		return ReadRequestFile(args[1], runDir)
	case len(args) == 1 && strings.HasPrefix(args[0], "--request-file="):
		return ReadRequestFile(strings.TrimPrefix(args[0], "--request-file="), runDir)
	default:
		return Request{}, errors.New("usage: <base64 request JSON> | --request-file <path>")
	}
}

// EncodeReply returns the standard base64 of the reply JSON (meta never null).
func EncodeReply(r Reply) string {
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Meta holds only JSON-safe values; fall back to an error envelope rather than none.
		return EncodeReply(Reply{Error: "encode reply: " + err.Error()})
	}
	return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// DecodeReply parses a helper's standard output: exactly one base64 envelope line.
func DecodeReply(out []byte) (Reply, error) {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return Reply{}, errors.New("helper printed no envelope")
	}
	if strings.ContainsAny(s, "\n\r") {
		return Reply{}, errors.New("helper printed more than one line")
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return Reply{}, fmt.Errorf("envelope is not standard base64: %w", err)
	}
	var r Reply
	if err := json.Unmarshal(raw, &r); err != nil {
		return Reply{}, fmt.Errorf("envelope is not valid JSON: %w", err)
	}
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	return r, nil
}
