// Package places resolves the sandbox locations and limits of PROTOCOL.md from the environment.
package places

import (
	"os"
	"path/filepath"
	"strconv"
)

// Defaults from PROTOCOL.md.
const (
	DefaultHome      = "/home/agent"
	DefaultRunDir    = "/run/guilds"
	DefaultResultMax = 8192
	DefaultCDPURL    = "http://127.0.0.1:9222"
	minResultMax     = 512
)

// Home is the agent's workspace (GUILDS_HOME), cleaned and absolute.
func Home() string { return absEnv("GUILDS_HOME", DefaultHome) }

// RunDir is the container-lifetime state folder (GUILDS_RUN_DIR), cleaned and absolute.
func RunDir() string { return absEnv("GUILDS_RUN_DIR", DefaultRunDir) }

// CDPURL is the Chromium DevTools endpoint guilds-browser attaches to.
func CDPURL() string {
	if v := os.Getenv("GUILDS_CDP_URL"); v != "" {
		return v
	}
	return DefaultCDPURL
}

// ResultMax is the helper's cap on reply text (CODE_RESULT_MAX_BYTES), never below 512.
func ResultMax() int {
	n, err := strconv.Atoi(os.Getenv("CODE_RESULT_MAX_BYTES"))
	if err != nil || n <= 0 {
		return DefaultResultMax
	}
	return max(n, minResultMax)
}

func absEnv(name, def string) string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	if abs, err := filepath.Abs(v); err == nil {
		v = abs
	}
	return filepath.Clean(v)
}
