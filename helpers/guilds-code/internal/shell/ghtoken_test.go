package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitRemoteURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, host, repo string }{
		{"https://github.com/owner/name.git", "github.com", "owner/name"},
		{"https://github.com/owner/name", "github.com", "owner/name"},
		{"https://ghe.example:8443/owner/name.git", "ghe.example:8443", "owner/name"},
		{"ssh://git@github.com:22/owner/name.git", "github.com", "owner/name"},
		{"https://x-access-token@github.com/owner/name/", "github.com", "owner/name"},
		{"ssh://git@github.com/owner/name.git", "github.com", "owner/name"},
		{"git@github.com:owner/name.git", "github.com", "owner/name"},
		{"github.com:owner/name", "github.com", "owner/name"},
		{"/srv/git/name.git", "", ""},
		{"../other", "", ""},
		{"https://github.com/owner", "", ""},
		{"https://github.com/a/b/c", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		host, repo := splitRemoteURL(tt.url)
		if host != tt.host || repo != tt.repo {
			t.Errorf("splitRemoteURL(%q) = %q, %q; want %q, %q", tt.url, host, repo, tt.host, tt.repo)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestGHTokenFollowsTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := filepath.Join(e.home, "repos", "app")
	other := filepath.Join(e.home, "repos", "other")
	for _, d := range []string{repo, other} {
		if err := os.MkdirAll(filepath.Join(d, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, d, "init", "-q")
	}
	git(t, repo, "remote", "add", "upstream", "https://github.com/someone/else.git")
	git(t, repo, "remote", "add", "origin", "https://github.com/Acme/App.git")
	git(t, other, "remote", "add", "origin", "git@github.com:acme/other.git")
	// A worktree of repo resolves through its .git file and commondir.
	git(t, repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(e.home, "wt")
	git(t, repo, "worktree", "add", "-q", wt)
	tokens := `{"tokens":[{"host":"github.com","repository":"acme/app","token":"ghs_app","expires_at":"2030-01-01T00:00:00Z"},
		{"host":"github.com","repository":"acme/other","token":"ghs_other","expires_at":"2030-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(e.runDir, "git-tokens.json"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ cd, want string }{
		{repo + "/src", "ghs_app"},
		{other, "ghs_other"},
		{wt, "ghs_app"},
		{e.home, ""},
	}
	for _, s := range steps {
		e.call("shell", fmt.Sprintf(`{"command":"cd %s"}`, s.cd))
		r := e.call("shell", `{"command":"echo \"[$GH_TOKEN]\""}`)
		if got := strings.TrimSpace(r.Text); got != "["+s.want+"]" {
			t.Errorf("in %s: GH_TOKEN %s, want [%s]", s.cd, got, s.want)
		}
	}
	// A background command started in the repository gets its token too.
	e.call("shell", fmt.Sprintf(`{"command":"cd %s"}`, repo))
	if r := e.call("shell", `{"command":"echo \"[$GH_TOKEN]\"","background":true}`); r.Failed() {
		t.Fatal(r.Error)
	}
	if r := waitState(e, "b1", "exited 0"); !strings.HasSuffix(r.Text, "[ghs_app]") {
		t.Fatalf("background status %q", r.Text)
	}
}
