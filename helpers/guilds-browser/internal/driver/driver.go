// Package driver finds the installed Playwright driver (playwright-core and Node) without downloading anything.
//
// The playwright-core package folder (the one holding cli.js) is looked up in this order:
//
//  1. $GUILDS_PLAYWRIGHT_DIR, when set (it must hold cli.js, or the lookup fails there);
//  2. <folder of the guilds-browser binary>/../tools/node_modules/playwright-core
//     (a checkout: bin/guilds-browser beside tools/, filled by `make setup`);
//  3. /opt/guilds/tools/node_modules/playwright-core (the sandbox image).
//
// Node is $PLAYWRIGHT_NODEJS_PATH when set, otherwise `node` on PATH. Browsers are never
// downloaded: guilds-browser attaches to the Chromium already running at GUILDS_CDP_URL.
package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/mxschmitt/playwright-go"
)

// ImageDir is where the sandbox image installs playwright-core.
const ImageDir = "/opt/guilds/tools/node_modules/playwright-core"

// Driver is a located playwright-core package and the Node that runs it.
type Driver struct {
	Dir  string // the playwright-core package folder (holds cli.js)
	Node string // the node executable
}

// Find locates playwright-core and Node; exe is the running binary's path (for the checkout layout).
func Find(exe string) (Driver, error) {
	dir, err := findDir(exe)
	if err != nil {
		return Driver{}, err
	}
	node := os.Getenv("PLAYWRIGHT_NODEJS_PATH")
	if node == "" {
		node, err = exec.LookPath("node")
		if err != nil {
			return Driver{}, errors.New("node is not installed: install Node.js (`make setup` does) or set PLAYWRIGHT_NODEJS_PATH to its path")
		}
	} else if _, err := os.Stat(node); err != nil {
		return Driver{}, fmt.Errorf("PLAYWRIGHT_NODEJS_PATH %s: %w", node, err)
	}
	return Driver{Dir: dir, Node: node}, nil
}

// Candidates lists the folders Find tries, in order.
func Candidates(exe string) []string {
	var c []string
	if v := os.Getenv("GUILDS_PLAYWRIGHT_DIR"); v != "" {
		return []string{v}
	}
	if exe != "" {
		c = append(c, filepath.Join(filepath.Dir(exe), "..", "tools", "node_modules", "playwright-core"))
	}
	return append(c, ImageDir)
}

func findDir(exe string) (string, error) {
	cands := Candidates(exe)
	for _, d := range cands {
		if fi, err := os.Stat(filepath.Join(d, "cli.js")); err == nil && fi.Mode().IsRegular() {
			abs, err := filepath.Abs(d)
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", d, err)
			}
			return abs, nil
		}
	}
	return "", fmt.Errorf("playwright-core is not installed: looked for cli.js in %s; run `make setup` (it installs playwright-core@1.64.1 into tools/node_modules) or set GUILDS_PLAYWRIGHT_DIR to the playwright-core folder", strings.Join(cands, ", "))
}

// Version is the playwright-core version playwright-go v0.6401.0 speaks.
const Version = "1.64.1"

// CheckVersion reads the package's version and refuses any other than Version.
func (d Driver) CheckVersion() error {
	b, err := os.ReadFile(filepath.Join(d.Dir, "package.json"))
	if err != nil {
		return fmt.Errorf("read playwright-core's package.json: %w", err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("playwright-core's package.json: %w", err)
	}
	if pkg.Version != Version {
		return fmt.Errorf("playwright-core %s is installed in %s, but guilds-browser needs %s; run `make setup`", pkg.Version, d.Dir, Version)
	}
	return nil
}

// Shim writes, into dir, a cli.js that answers playwright-go's `--version` probe from the
// version CheckVersion verified, without loading the whole driver bundle (that probe costs a
// second Node boot on every daemon start), and runs the real cli.js for everything else.
func (d Driver) Shim(dir string) (string, error) {
	if err := d.CheckVersion(); err != nil {
		return "", err
	}
	real, err := json.Marshal(filepath.Join(d.Dir, "cli.js"))
	if err != nil {
		return "", err
	}
	src := fmt.Sprintf("// Written by guilds-browser: answers the version probe, else runs playwright-core's cli.js.\n"+
		"if (process.argv.length === 3 && process.argv[2] === '--version') console.log('Version %s');\n"+
		"else require(%s);\n", Version, real)
	path := filepath.Join(dir, "playwright-cli.js")
	if old, err := os.ReadFile(path); err == nil && string(old) == src {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := atomicfile.WriteFile(path, []byte(src), 0o600); err != nil {
		return "", fmt.Errorf("write the driver shim: %w", err)
	}
	return path, nil
}

// Options points playwright-go at this driver (through cli, the path Shim returned, or the
// package's own cli.js) with its environment variables, and returns run options that skip
// every download.
func (d Driver) Options(cli string, log *os.File) *playwright.RunOptions {
	if cli == "" {
		cli = filepath.Join(d.Dir, "cli.js")
	}
	os.Setenv("PLAYWRIGHT_CLI_PATH", cli)
	os.Setenv("PLAYWRIGHT_NODEJS_PATH", d.Node)
	os.Setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
	return &playwright.RunOptions{
		DriverDirectory:     d.Dir,
		SkipInstallBrowsers: true,
		Verbose:             false,
		Stdout:              log,
		Stderr:              log,
	}
}
