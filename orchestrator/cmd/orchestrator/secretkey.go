package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// secretKeyFile is where the binary keeps the GUILDS_SECRET_KEY it generated, under GUILDS_DATA_DIR
// (the file make run writes too).
const secretKeyFile = "secret-key"

// Where the secret key came from, as GET /api/instance reports it (never the key).
const (
	keyFromEnv     = "environment" // GUILDS_SECRET_KEY, from the environment or .env
	keyFromDataDir = "data_dir"    // GUILDS_DATA_DIR/secret-key, generated at an earlier start
	keyGenerated   = "generated"   // generated at this start into GUILDS_DATA_DIR/secret-key
)

// ensureSecretKey fills cfg.SecretKey when GUILDS_SECRET_KEY is unset, as the binary does for its
// embedded database: from GUILDS_DATA_DIR/secret-key, which the first such start generates (mode
// 0600) with one warning. A file that holds no valid key is an error and is never replaced: the
// credentials sealed with it would be lost. It returns where the key came from.
func ensureSecretKey(cfg *config.Config, log *slog.Logger) (string, error) {
	if cfg.SecretKey != "" {
		return keyFromEnv, nil
	}
	path := filepath.Join(cfg.DataDir, secretKeyFile)
	data, err := os.ReadFile(path)
	if err == nil {
		key := strings.TrimSpace(string(data))
		if _, err := sealed.ParseKey(key); err != nil {
			return "", fmt.Errorf("%s holds no valid %s (%v): restore it from your backup, or set %s; it is not replaced, since the stored credentials need the key they were sealed with", path, sealed.KeyVar, err, sealed.KeyVar)
		}
		cfg.SecretKey = key
		return keyFromDataDir, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s (%s is unset): %w", path, sealed.KeyVar, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return "", fmt.Errorf("create GUILDS_DATA_DIR for %s: %w", secretKeyFile, err)
	}
	key := sealed.GenerateKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write a generated %s to %s: %w", sealed.KeyVar, path, err)
	}
	_, werr := f.WriteString(key + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("write a generated %s to %s: %w", sealed.KeyVar, path, err)
	}
	cfg.SecretKey = key
	log.Warn(sealed.KeyVar+" is not set: generated one and kept it for the next starts; back it up with the database, since the stored credentials cannot be read without it",
		"path", path)
	return keyGenerated, nil
}
