package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// TestEnsureSecretKey: unset, the key is generated once into the data folder (0600, one warning)
// and read back at the next start; a set key is used as it is; a damaged file is an error and is
// kept.
func TestEnsureSecretKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	cfg := config.Config{DataDir: dir}
	src, err := ensureSecretKey(&cfg, log)
	if err != nil || src != keyGenerated {
		t.Fatalf("first start: %q %v", src, err)
	}
	if _, err := sealed.FromString(cfg.SecretKey); err != nil {
		t.Fatalf("generated key: %v", err)
	}
	path := filepath.Join(dir, secretKeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), path) || strings.Contains(logs.String(), cfg.SecretKey) {
		t.Fatalf("want one warning naming the file, never the key: %s", logs.String())
	}
	first := cfg.SecretKey

	logs.Reset()
	cfg = config.Config{DataDir: dir}
	if src, err := ensureSecretKey(&cfg, log); err != nil || src != keyFromDataDir || cfg.SecretKey != first || logs.Len() != 0 {
		t.Fatalf("next start: %q %v, same key %v, logs %q", src, err, cfg.SecretKey == first, logs.String())
	}

	set := sealed.GenerateKey()
	cfg = config.Config{DataDir: dir, SecretKey: set}
	if src, err := ensureSecretKey(&cfg, log); err != nil || src != keyFromEnv || cfg.SecretKey != set {
		t.Fatalf("set key: %q %v", src, err)
	}

	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = config.Config{DataDir: dir}
	if _, err := ensureSecretKey(&cfg, log); err == nil || !strings.Contains(err.Error(), "restore it from your backup") {
		t.Fatalf("damaged key file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not a key\n" {
		t.Fatalf("the damaged file was replaced: %q", b)
	}
}
