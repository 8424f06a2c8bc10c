package gmail_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters/gmail"
)

// FuzzBody: any payload a mailbox answers (a MIME tree with base64url parts) decodes without a
// panic into valid UTF-8, and data that is base64url of some bytes decodes back to them.
func FuzzBody(f *testing.F) {
	f.Add(`{"mimeType":"text/plain","body":{"data":"aGk_"}}`, []byte("hi?"))
	f.Add(`{"mimeType":"multipart/alternative","parts":[{"mimeType":"text/html","body":{"data":"PGI-aGk8L2I-"}}]}`, []byte("<b>"))
	f.Add(`{"mimeType":"multipart/mixed","parts":[{"filename":"a","body":{"attachmentId":"x","size":-1}},{"parts":[{"parts":[]}]}]}`, []byte{0xff, 0})
	f.Fuzz(func(t *testing.T, payload string, data []byte) {
		var p gmail.Part
		if json.Unmarshal([]byte(payload), &p) == nil {
			text, _, atts := gmail.Body(p)
			if !utf8.ValidString(text) {
				t.Fatalf("invalid UTF-8 from %q", payload)
			}
			for _, a := range atts {
				if strings.ContainsAny(a.Name, "\r\n") {
					t.Fatalf("attachment name %q spans lines", a.Name)
				}
			}
		}
		for _, enc := range []string{base64.URLEncoding.EncodeToString(data), base64.RawURLEncoding.EncodeToString(data), base64.StdEncoding.EncodeToString(data)} {
			got, err := gmail.DecodeData(enc)
			if err != nil || string(got) != string(data) {
				t.Fatalf("DecodeData(%q) = %q, %v; want %q", enc, got, err, data)
			}
		}
		_, _ = gmail.DecodeData(string(data))
	})
}
