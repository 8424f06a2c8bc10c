package gmail

import (
	"encoding/base64"
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Part is a Gmail MessagePart, the fields read.
type Part struct {
	PartID   string   `json:"partId"`
	MimeType string   `json:"mimeType"`
	Filename string   `json:"filename"`
	Headers  []Header `json:"headers"`
	Body     struct {
		AttachmentID string `json:"attachmentId"`
		Size         int64  `json:"size"`
		Data         string `json:"data"`
	} `json:"body"`
	Parts []Part `json:"parts"`
}

// Header is one message header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Attachment is a part with a file name: named with its type and size, never its bytes.
type Attachment struct {
	Name string
	Type string
	Size int64
}

// maxDepth bounds the MIME tree walked (Gmail nests a few levels; a hostile tree is cut there).
const maxDepth = 16

// DecodeData decodes a part's body.data: base64url, with or without padding (Gmail sends it
// padded; some clients' raw parts are not), also accepting the standard alphabet.
func DecodeData(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the part's data is not base64url: %w", err)
	}
	return b, nil
}

// Body is a message's readable text and its attachments: the text/plain parts that are not
// attachments, decoded and joined; the HTML parts turned to text only when there is no plain one.
// fromHTML says the text came from HTML. Undecodable parts are skipped.
func Body(p Part) (text string, fromHTML bool, atts []Attachment) {
	var plain, htm []string
	walk(p, 0, &plain, &htm, &atts)
	if len(plain) > 0 {
		return tidy(strings.Join(plain, "\n\n")), false, atts
	}
	if len(htm) > 0 {
		return tidy(htmlText(strings.Join(htm, "\n"))), true, atts
	}
	return "", false, atts
}

func walk(p Part, depth int, plain, htm *[]string, atts *[]Attachment) {
	if depth > maxDepth {
		return
	}
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(p.MimeType, ";", 2)[0]))
	if p.Filename != "" || (p.Body.AttachmentID != "" && !strings.HasPrefix(mt, "multipart/")) {
		name := p.Filename
		if name == "" {
			name = "(unnamed)"
		}
		*atts = append(*atts, Attachment{Name: oneLine(name), Type: mt, Size: p.Body.Size})
		return
	}
	if p.Body.Data != "" && (mt == "text/plain" || mt == "text/html" || mt == "") {
		b, err := DecodeData(p.Body.Data)
		if err == nil {
			s := strings.ToValidUTF8(string(b), "\uFFFD")
			if mt == "text/html" {
				*htm = append(*htm, s)
			} else {
				*plain = append(*plain, s)
			}
		}
	}
	for _, c := range p.Parts {
		walk(c, depth+1, plain, htm, atts)
	}
}

var (
	dropBlocks = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	breaks     = regexp.MustCompile(`(?i)<(br|/p|/div|/tr|/li|/h[1-6])\b[^>]*>`)
	tags       = regexp.MustCompile(`(?s)<[^>]*>`)
)

// htmlText reduces HTML to its text: scripts and styles dropped, block ends as line breaks,
// entities decoded.
func htmlText(s string) string {
	s = dropBlocks.ReplaceAllString(s, "")
	s = breaks.ReplaceAllString(s, "\n")
	s = tags.ReplaceAllString(s, "")
	return html.UnescapeString(s)
}

// tidy normalizes line ends, trims trailing spaces and collapses runs of blank lines.
func tidy(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\u00a0")
		if strings.TrimSpace(l) == "" {
			blank++
			if blank > 1 {
				continue
			}
			l = ""
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// clipText keeps at most n runes of s, saying how much was cut.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("\n[… %d more characters]", len(r)-n)
}

// oneLine puts a header value on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// header returns the first header of that name (case-insensitive).
func header(hs []Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return oneLine(h.Value)
		}
	}
	return ""
}
