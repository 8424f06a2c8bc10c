package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"strings"
	"unicode/utf8"
)

// manySecrets returns n realistic, distinct credential-like values.
func manySecrets(n int) []string {
	rng := rand.New(rand.NewSource(int64(n)))
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	prefixes := []string{"sk-live-", "ghs_", "xoxb-", "AKIA", "pk_test_", "eyJhbGciOi", "tvly-", "sntrys_"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		b.WriteString(prefixes[i%len(prefixes)])
		for j := 0; j < 24+rng.Intn(16); j++ {
			b.WriteByte(alnum[rng.Intn(len(alnum))])
		}
		if i%7 == 0 {
			b.WriteString("/+=&é")
		}
		out[i] = b.String()
	}
	return out
}

// corpus returns about size bytes of tool output (log lines, JSON, base64 blobs, hex hashes) with
// the given secrets spread through it in their raw and encoded forms.
func corpus(size int, secrets []string) string {
	rng := rand.New(rand.NewSource(7))
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "2026-11-29T22:%02d:%02d.%03dZ INFO request id=%08x path=/api/v1/items/%d status=200 dur=%dms\n", i%60, (i*7)%60, i%1000, rng.Uint32(), rng.Intn(99999), rng.Intn(900))
		case 1:
			fmt.Fprintf(&b, `{"id":%d,"name":"item %d","tags":["alpha","beta"],"price":%d.%02d,"owner":"user%d@example.com"}`+"\n", i, i, rng.Intn(500), rng.Intn(100), rng.Intn(1000))
		case 2:
			blob := make([]byte, 60)
			rng.Read(blob)
			fmt.Fprintf(&b, "attachment: %s\n", base64.StdEncoding.EncodeToString(blob))
		case 3:
			fmt.Fprintf(&b, "commit %016x%016x%08x Merge pull request #%d from feature/täst-ünïcode\n", rng.Uint64(), rng.Uint64(), rng.Uint32(), rng.Intn(9999))
		case 4:
			b.WriteString("    at handler (src/server/routes/items.ts:42:17) — 処理に失敗しました\n")
		}
		if len(secrets) > 0 && i%40 == 39 {
			s := secrets[rng.Intn(len(secrets))]
			switch rng.Intn(4) {
			case 0:
				fmt.Fprintf(&b, "Authorization: Bearer %s\n", s)
			case 1:
				fmt.Fprintf(&b, "Basic %s\n", base64.StdEncoding.EncodeToString([]byte("user:"+s)))
			case 2:
				fmt.Fprintf(&b, "GET /cb?token=%s&x=1\n", url.QueryEscape(s))
			case 3:
				fmt.Fprintf(&b, `{"api_key":%q}`+"\n", s)
			}
		}
	}
	return b.String()
}

// goJSON is s as encoding/json writes it inside a string literal: the reference the redactor's
// own escaping is checked against.
func goJSON(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// pyJSON is s as Python's json.dumps (ensure_ascii) writes it, without the quotes.
func pyJSON(s string) string {
	var b strings.Builder
	for _, r := range goJSON(s, false) {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
