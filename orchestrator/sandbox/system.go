package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/guildsai/guilds/shared/atomicfile"
)

// systemDirName is the folder, under the sandbox root, of what every sandbox shares: the
// generated /etc files and copies of what the sandboxes' users could not reach where it lies.
const systemDirName = ".system"

// etcAllowed are the host's /etc entries a sandbox sees, read-only: what programs need to run,
// find their libraries, fonts and certificates, and resolve names. Never a credential, a key or
// the host's accounts: passwd, group, hosts, resolv.conf and gitconfig are the sandbox's own.
var etcAllowed = []string{
	"alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "chromium", "chromium.d",
	"debian_version", "environment", "fonts", "gai.conf", "host.conf", "inputrc", "issue", "ld.so.cache",
	"ld.so.conf", "ld.so.conf.d", "localtime", "magic", "magic.mime", "mailcap", "mime.types", "nanorc",
	"nsswitch.conf", "os-release", "perl", "profile", "protocols", "python3", "services",
	"ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "vim", "wgetrc", "xdg",
}

// gitConfig is the sandbox's system git configuration: image/gitconfig, which a test keeps equal.
const gitConfig = `# System git configuration of the sandbox image: GitHub credentials come from the run's tokens
# (PROTOCOL.md, git credentials); the orchestrator sets the same again through GIT_CONFIG_COUNT.
[credential "https://github.com"]
	helper = /usr/local/bin/guilds-git-credential
	useHttpPath = true
`

// etcFiles are the generated /etc files of a sandbox on the given network.
func etcFiles(network string) map[string]string {
	resolv := "# the sandbox has no network\n"
	if network == NetworkUser {
		resolv = "nameserver " + sandboxDNS + "\n"
	}
	uid := fmt.Sprint(SandboxUID)
	return map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:" + uid + ":" + uid + ":agent:" + Home + ":/bin/bash\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":       "root:x:0:\nagent:x:" + uid + ":\nnogroup:x:65534:\n",
		"hostname":    "sandbox\n",
		"hosts":       "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"resolv.conf": resolv,
		"gitconfig":   gitConfig,
	}
}

// writeEtc writes the generated /etc files into dir (readable by every sandbox user).
func writeEtc(dir, network string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the sandboxes' /etc: %w", err)
	}
	for name, content := range etcFiles(network) {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write the sandboxes' /etc/%s: %w", name, err)
		}
	}
	return nil
}

// etcArgs are bwrap's arguments for the sandbox's /etc: the allowed host entries that exist and
// the generated files from dir.
func etcArgs(dir string) []string {
	var a []string
	for _, name := range etcAllowed {
		src := filepath.Join("/etc", name)
		if _, err := os.Stat(src); err == nil {
			a = append(a, "--ro-bind", src, src)
		}
	}
	names := make([]string, 0, len(etcFiles(NetworkNone)))
	for name := range etcFiles(NetworkNone) {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a = append(a, "--ro-bind", filepath.Join(dir, name), filepath.Join("/etc", name))
	}
	return a
}

// reachable reports, as an error naming what is in the way, whether a host user with no rights
// of its own (an agent's host uid) can reach path: every folder on the way searchable by others,
// and path itself readable (and, for a folder or program, searchable) by them.
func reachable(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for _, p := range []string{path, real} {
		p, _ = filepath.Abs(p)
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			fi, err := os.Stat(dir)
			if err != nil {
				return err
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("%s has mode %04o: others cannot search it", dir, fi.Mode().Perm())
			}
			if dir == "/" {
				break
			}
		}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	need := fs.FileMode(0o004)
	if fi.IsDir() || fi.Mode().Perm()&0o100 != 0 {
		need |= 0o001
	}
	if fi.Mode().Perm()&need != need {
		return fmt.Errorf("%s has mode %04o: others cannot read it", real, fi.Mode().Perm())
	}
	return nil
}

// stageFile returns a path of src that sandbox users can reach: src itself when they can, else a
// copy in dir, refreshed when src changed.
func stageFile(src, dir string) (string, error) {
	if reachable(src) == nil {
		return src, nil
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if st, err := os.Stat(dst); err == nil && st.Size() == fi.Size() && st.ModTime().Equal(fi.ModTime()) {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer in.Close()
	data, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	// A copy made before keeps its mode through the write: set the one the source has now.
	if err := atomicfile.WriteFile(dst, data, openToAll(fi.Mode())); err != nil {
		return "", err
	}
	if err := os.Chmod(dst, openToAll(fi.Mode())); err != nil {
		return "", err
	}
	if err := os.Chtimes(dst, fi.ModTime(), fi.ModTime()); err != nil {
		return "", err
	}
	return dst, nil
}

// stageTree returns a path of the folder src that sandbox users can reach: src itself when they
// can, else a copy under dir named for its contents (links kept as links).
func stageTree(src, dir string) (string, error) {
	if reachable(src) == nil {
		return src, nil
	}
	sum := sha256.New()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(sum, "%s\x00%o\x00%d\x00%d\n", strings.TrimPrefix(p, src), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src)+"-"+hex.EncodeToString(sum.Sum(nil))[:16])
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp := dst + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := copyTree(src, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("copy %s for the sandboxes: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// copyTree copies the folder src to dst, readable by everyone, links as links.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, openToAll(fi.Mode()))
		}
		return nil // sockets, devices and pipes have no place in a sandbox's engines
	})
}

// openToAll is mode made readable by everyone, and runnable by everyone when its owner may run it.
func openToAll(mode fs.FileMode) fs.FileMode {
	p := mode.Perm() | 0o444
	if p&0o100 != 0 {
		p |= 0o111
	}
	return p
}
