package orchestrator

import "testing"

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
