package browse

import (
	"errors"
	"strings"
	"testing"
)

func TestPlaywrightMessage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Frame.Goto http://x/: playwright: net::ERR_CONNECTION_REFUSED at http://x/\nCall log:\n  - navigating to \"http://x/\", waiting until \"load\"",
			"net::ERR_CONNECTION_REFUSED at http://x/"},
		{"playwright: timeout: Timeout 15000ms exceeded.\nCall log:\n  - waiting for aria-ref=e9\n  - locator resolved to <button disabled>\n  - attempting click action\n    2 × waiting for element to be visible, enabled and stable\n      - element is not enabled\n    - retrying click action\n    - waiting 500ms",
			"timeout: Timeout 15000ms exceeded. (last step: element is not enabled)"},
		{"playwright: timeout: Timeout 5ms exceeded.\nCall log:\n  - waiting for locator('x')\n  - waiting 20ms", "timeout: Timeout 5ms exceeded. (last step: waiting for locator('x'))"},
		{"plain failure", "plain failure"},
	}
	for _, tt := range tests {
		if got := playwrightMessage(errors.New(tt.in)); got != tt.want {
			t.Errorf("playwrightMessage(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		tool, args, wantErr string
	}{
		{"browser_snapshot", `{}`, ""},
		{"browser_navigate", `{"url":"https://example.com"}`, ""},
		{"browser_navigate", `{"url":"ftp://x"}`, `scheme "ftp" is not supported`},
		{"browser_type", `{"locator":"e1"}`, "text is required"},
		{"browser_fill", `{"locator":"e1","value":""}`, ""},
		{"browser_scroll", `{"direction":"Down"}`, ""},
		{"browser_scroll", `{"direction":"down","target":"nonsense target"}`, "target: "},
		{"browser_scroll", `{}`, "direction is required"},
		{"browser_eval", `{"script":"return 1","extra":1}`, `unknown field "extra"`},
		{"browser_click", `[]`, "bad arguments"},
		{"browser_hover", `{}`, `unknown tool "browser_hover"`},
	}
	for _, tt := range tests {
		err := Check(tt.tool, []byte(tt.args))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Check(%s, %s) = %v", tt.tool, tt.args, err)
		case tt.wantErr != "" && (err == nil || !contains(err.Error(), tt.wantErr)):
			t.Errorf("Check(%s, %s) = %v, want %q", tt.tool, tt.args, err, tt.wantErr)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
