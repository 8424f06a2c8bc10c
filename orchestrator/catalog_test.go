package orchestrator

import (
	"strings"
	"testing"
)

// TestNamespacedTool: a server tool's name as the model sees it, whatever characters the server uses.
func TestNamespacedTool(t *testing.T) {
	cases := []struct{ slug, name, want string }{
		{"notion", "search", "notion_search"},
		{"opensea", "get.collection", "opensea_get_collection"},
		{"my-server", "Fetch-URL", "my_server_fetch_url"},
		{"srv", "a b/c:d", "srv_a_b_c_d"},
		{"srv", "café", "srv_caf_"},
		{"srv", "ALL_CAPS_9", "srv_all_caps_9"},
		{"srv", "\xff", "srv__"},
	}
	for _, c := range cases {
		if got := NamespacedTool(c.slug, c.name); got != c.want {
			t.Errorf("NamespacedTool(%q, %q) = %q, want %q", c.slug, c.name, got, c.want)
		}
	}
}

func TestNamespacedToolFitsTheLimit(t *testing.T) {
	if got := NamespacedTool("cigale", "get.invoice"); got != "cigale_get_invoice" {
		t.Fatalf("short name = %q", got)
	}
	exact := NamespacedTool("s", strings.Repeat("a", 62)) // 64 bytes: kept as is
	if len(exact) != 64 || exact != "s_"+strings.Repeat("a", 62) {
		t.Fatalf("64-byte name = %q", exact)
	}
	long := NamespacedTool("accounting-self-hosted", "list_every_invoice_of_the_organisation_with_attachments")
	again := NamespacedTool("accounting-self-hosted", "list_every_invoice_of_the_organisation_with_attachments")
	other := NamespacedTool("accounting-self-hosted", "list_every_invoice_of_the_organisation_with_attachmentz")
	if len(long) != MaxToolName || long != again || long == other || !strings.HasPrefix(long, "accounting_self_hosted_list_every_invoice_of_the_") {
		t.Fatalf("short forms %q, %q, %q", long, again, other)
	}
	for _, n := range []string{long, other} {
		if strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || n[0] < 'a' || n[0] > 'z' {
			t.Fatalf("%q breaks the tool name rules", n)
		}
	}
}
