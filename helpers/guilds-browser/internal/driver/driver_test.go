package driver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	checkout := filepath.Join(root, "tools", "node_modules", "playwright-core")
	explicit := filepath.Join(root, "explicit")
	for _, d := range []string{checkout, explicit} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cli.js"), []byte("//"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(root, "bin", "guilds-browser")
	t.Setenv("PLAYWRIGHT_NODEJS_PATH", os.Args[0]) // any existing file stands in for node here

	tests := []struct {
		name, env, exe, want, wantErr string
	}{
		{name: "env var wins", env: explicit, exe: exe, want: explicit},
		{name: "checkout beside bin", exe: exe, want: checkout},
		{name: "env var without cli.js fails", env: filepath.Join(root, "nope"), exe: exe, wantErr: "GUILDS_PLAYWRIGHT_DIR"},
		{name: "nothing found names the fix", exe: filepath.Join(root, "a", "b", "c"), wantErr: "make setup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GUILDS_PLAYWRIGHT_DIR", tt.env)
			d, err := Find(tt.exe)
			if tt.wantErr != "" {
				if _, statErr := os.Stat(ImageDir); statErr == nil && tt.env == "" {
					t.Skip("the image path exists on this machine")
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Dir != tt.want {
				t.Fatalf("dir = %s, want %s", d.Dir, tt.want)
			}
		})
	}
}

func TestMissingNode(t *testing.T) {
	t.Setenv("GUILDS_PLAYWRIGHT_DIR", "")
	t.Setenv("PLAYWRIGHT_NODEJS_PATH", filepath.Join(t.TempDir(), "no-node"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cli.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GUILDS_PLAYWRIGHT_DIR", dir)
	if _, err := Find(""); err == nil || !strings.Contains(err.Error(), "PLAYWRIGHT_NODEJS_PATH") {
		t.Fatalf("err = %v, want a PLAYWRIGHT_NODEJS_PATH error", err)
	}
}

func TestShim(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cli.js", "console.log('real cli', process.argv.slice(2).join(' '))")
	d := Driver{Dir: dir}

	write("package.json", `{"name":"playwright-core","version":"1.50.0"}`)
	if _, err := d.Shim(t.TempDir()); err == nil || !strings.Contains(err.Error(), "needs "+Version) {
		t.Fatalf("old version: err = %v", err)
	}

	write("package.json", `{"name":"playwright-core","version":"`+Version+`"}`)
	state := t.TempDir()
	cli, err := d.Shim(state)
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; the shim's behaviour is not checked")
	}
	for args, want := range map[string]string{"--version": "Version " + Version, "run-driver": "real cli run-driver"} {
		out, err := exec.Command(node, cli, args).Output()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Fatalf("node shim %s = %q, %v; want %q", args, out, err, want)
		}
	}
}
