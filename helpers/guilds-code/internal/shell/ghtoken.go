package shell

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// gitTokens is $GUILDS_RUN_DIR/git-tokens.json (PROTOCOL.md).
type gitTokens struct {
	Tokens []struct {
		Host       string `json:"host"`
		Repository string `json:"repository"`
		Token      string `json:"token"`
	} `json:"tokens"`
}

// repoToken returns the token git-tokens.json holds for the repository that contains dir
// (its origin remote, else its first remote), or "" when there is none.
func repoToken(runDir, dir string) string {
	raw, err := os.ReadFile(filepath.Join(runDir, "git-tokens.json"))
	if err != nil {
		return ""
	}
	var toks gitTokens
	if json.Unmarshal(raw, &toks) != nil || len(toks.Tokens) == 0 {
		return ""
	}
	host, repo := remoteOf(dir)
	if repo == "" {
		return ""
	}
	for _, t := range toks.Tokens {
		if strings.EqualFold(t.Host, host) && strings.EqualFold(strings.TrimSuffix(t.Repository, ".git"), repo) {
			return t.Token
		}
	}
	return ""
}

// remoteOf finds the git repository holding dir and returns the host and owner/name of its
// origin remote (else its first remote).
func remoteOf(dir string) (host, repo string) {
	for d := dir; ; d = filepath.Dir(d) {
		gitPath := filepath.Join(d, ".git")
		if fi, err := os.Stat(gitPath); err == nil {
			return parseRemote(gitConfigPath(gitPath, fi.IsDir()))
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// gitConfigPath is the config file of the repository whose .git entry is gitPath; a .git file
// (worktree or submodule) points at the real git folder, whose commondir may point further.
func gitConfigPath(gitPath string, isDir bool) string {
	gitDir := gitPath
	if !isDir {
		b, err := os.ReadFile(gitPath)
		if err != nil {
			return ""
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return ""
		}
		gitDir = strings.TrimSpace(p)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(filepath.Dir(gitPath), gitDir)
		}
	}
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		gitDir = common
	}
	return filepath.Join(gitDir, "config")
}

// parseRemote reads a git config file for the url of remote "origin" (else the first remote).
func parseRemote(config string) (host, repo string) {
	b, err := os.ReadFile(config)
	if err != nil {
		return "", ""
	}
	var first, origin, section string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Join(strings.Fields(strings.Trim(line, "[]")), " "))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "url") || !strings.HasPrefix(section, "remote ") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if first == "" {
			first = v
		}
		if section == `remote "origin"` && origin == "" {
			origin = v
		}
	}
	if origin == "" {
		origin = first
	}
	return splitRemoteURL(origin)
}

// splitRemoteURL turns https://host[:port]/owner/name(.git), ssh://git@host/owner/name and
// git@host:owner/name into host (an http(s) one with its port, as the token file names it) and owner/name.
func splitRemoteURL(u string) (host, repo string) {
	if u == "" {
		return "", ""
	}
	var path string
	if strings.Contains(u, "://") {
		p, err := url.Parse(u)
		if err != nil {
			return "", ""
		}
		host, path = p.Host, p.Path // with its port, as git's credential helper sees an http(s) host
		if !strings.HasPrefix(p.Scheme, "http") {
			host = p.Hostname() // an ssh port is not the https host's
		}
	} else if at, rest, ok := strings.Cut(u, ":"); ok && !strings.Contains(at, "/") {
		if i := strings.LastIndexByte(at, '@'); i >= 0 {
			at = at[i+1:]
		}
		host, path = at, rest
	} else {
		return "", ""
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if strings.Count(path, "/") != 1 || host == "" {
		return "", ""
	}
	return host, path
}
