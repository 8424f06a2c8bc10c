package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator/pipeline"
)

// MaxStoredArgs is the most of a call's arguments stored with it: past it, long string values keep
// their head and say how many bytes were elided and their hash, so one call (a 7 MB file_write)
// cannot make a run's history unreadable.
const MaxStoredArgs = 64 << 10

// elidedHead is how much of a long string value an over-large arguments document keeps.
const elidedHead = 2 << 10

// boundArgs returns doc when it fits MaxStoredArgs; otherwise the same document with every string
// value longer than elidedHead cut to its head and a note of its size and sha256; and if that still
// does not fit (a huge array, say), an object saying what was elided, with the document's head.
func boundArgs(doc json.RawMessage) json.RawMessage {
	if len(doc) <= MaxStoredArgs {
		return doc
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		if b, err := marshalPlain(elideStrings(v)); err == nil && len(b) <= MaxStoredArgs {
			return b
		}
	}
	sum := sha256.Sum256(doc)
	head := cutUTF8(string(doc), MaxStoredArgs/2)
	b, _ := marshalPlain(map[string]any{"elided_arguments": map[string]any{
		"bytes": len(doc), "sha256": hex.EncodeToString(sum[:]), "head": head,
		"note": fmt.Sprintf("the arguments were %d bytes, over the %d-byte limit of a stored call; the head is kept", len(doc), MaxStoredArgs),
	}})
	return b
}

// elideStrings cuts every long string in v.
func elideStrings(v any) any {
	switch t := v.(type) {
	case string:
		if len(t) <= elidedHead {
			return t
		}
		sum := sha256.Sum256([]byte(t))
		head := cutUTF8(t, elidedHead)
		return fmt.Sprintf("%s…[%d of %d bytes elided, sha256 %s]", head, len(t)-len(head), len(t), hex.EncodeToString(sum[:]))
	case map[string]any:
		for k, x := range t {
			t[k] = elideStrings(x)
		}
	case []any:
		for i, x := range t {
			t[i] = elideStrings(x)
		}
	}
	return v
}

// cutUTF8 returns at most n bytes of s, cut on a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// marshalPlain encodes v without HTML escaping and without the trailing newline.
func marshalPlain(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// maskSecretArgs replaces the named top-level string arguments with the redaction marker.
func maskSecretArgs(doc json.RawMessage, names []string) json.RawMessage {
	if len(names) == 0 {
		return doc
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return doc
	}
	masked := false
	for _, n := range names {
		if raw, ok := m[n]; ok && len(raw) > 0 && raw[0] == '"' {
			m[n] = json.RawMessage(`"` + pipeline.Marker + `"`)
			masked = true
		}
	}
	if !masked {
		return doc
	}
	b, err := marshalPlain(m)
	if err != nil {
		return doc
	}
	return b
}

// requestHash is the digest a retry under the same client call id must match: the tool and its
// arguments as sent, compacted.
func requestHash(name string, args json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	var compact bytes.Buffer
	if json.Compact(&compact, args) == nil {
		h.Write(compact.Bytes())
	} else {
		h.Write(args)
	}
	return hex.EncodeToString(h.Sum(nil))
}
